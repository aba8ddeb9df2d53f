// arange: takes (start, end)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(16);
}

fn main() {}
