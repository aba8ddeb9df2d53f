// autotune: with #[autotune], num_warps belongs in each config, not in a #[kernel] list
use kernel_std::prelude::*;

#[kernel(num_warps = [4, 8])]
#[autotune(configs = [config(BLOCK = 16), config(BLOCK = 32)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
    store(x + offs, load(x + offs));
}

#[kernel(num_stages = [2, 9], num_warps = [])]
fn j(x: Ptr<f32>) {}

fn main() {}
