// signature: kernels cannot be unsafe
use kernel_std::prelude::*;

#[kernel]
unsafe fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
