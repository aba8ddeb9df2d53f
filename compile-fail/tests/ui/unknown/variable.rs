// unknown: a name that is not a local, parameter or meta-parameter
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let y = offs + stride;
}

fn main() {}
