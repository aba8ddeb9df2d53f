// autotune: #[kernel(num_warps = N)] follows the same rule
use kernel_std::prelude::*;

#[kernel(num_warps = 64)]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
