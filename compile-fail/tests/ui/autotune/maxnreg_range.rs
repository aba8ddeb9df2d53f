// autotune: maxnreg is from 16 to 255 registers per thread
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, num_warps = 8, maxnreg = 512)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
