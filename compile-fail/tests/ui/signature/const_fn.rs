// signature: kernels cannot be const fn
use kernel_std::prelude::*;

#[kernel]
const fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
