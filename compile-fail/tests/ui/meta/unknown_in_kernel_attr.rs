// meta: #[kernel(...)] names a meta-parameter the kernel does not have
use kernel_std::prelude::*;

#[kernel(BLOCK = [16], BLOCK_N = [32])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
