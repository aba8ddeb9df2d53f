// unknown: a method blocks do not have
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let y = offs.histogram(16);
}

fn main() {}
