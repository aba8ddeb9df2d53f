// autotune: every config sets the same meta-parameters as the first
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK_M = 16, BLOCK_N = 16), config(BLOCK_M = 32)], key = [n])]
fn k<const BLOCK_M: i32, const BLOCK_N: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK_M) + arange(0, BLOCK_N);
}

fn main() {}
