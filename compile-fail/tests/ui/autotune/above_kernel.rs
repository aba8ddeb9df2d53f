// autotune: #[autotune] must come below #[kernel], which reads it
use kernel_std::prelude::*;

#[autotune(configs = [config(num_warps = 4)], key = [n])]
#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
