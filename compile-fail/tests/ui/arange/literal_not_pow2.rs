// arange: the length must be a power of two or a multiple of 16
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 24);
}

fn main() {}
