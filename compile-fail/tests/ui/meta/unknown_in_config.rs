// meta: an autotune config names a meta-parameter the kernel does not have
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, BLOCK_K = 32)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
