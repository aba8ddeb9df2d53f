// signature: kernels cannot be async
use kernel_std::prelude::*;

#[kernel]
async fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
