// autotune: num_warps is a power of two from 1 to 32
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, num_warps = 6)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
