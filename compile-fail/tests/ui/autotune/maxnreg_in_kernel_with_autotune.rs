// autotune: with #[autotune], maxnreg goes in each config that wants it
use kernel_std::prelude::*;

#[kernel(maxnreg = 128)]
#[autotune(configs = [config(BLOCK = 16, num_warps = 8)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
