// autotune: `num_warps` in #[kernel(...)] takes one integer, not a list
use kernel_std::prelude::*;

#[kernel(num_warps = [4, 8])]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
