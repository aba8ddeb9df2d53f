// signature: kernels return nothing
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) -> i32 {
    let offs = arange(0, 16);
}

fn main() {}
