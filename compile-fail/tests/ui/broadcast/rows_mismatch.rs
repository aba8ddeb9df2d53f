// broadcast: [1, BLOCK_M] and [1, BLOCK_N] differ in their last dimension
use kernel_std::prelude::*;

#[kernel(BLOCK_M = [16], BLOCK_N = [32])]
fn k<const BLOCK_M: i32, const BLOCK_N: i32>(x: Ptr<f32>, n: i32) {
    let a = arange(0, BLOCK_M).as_row();
    let b = arange(0, BLOCK_N).as_row();
    let c = a * b;
}

fn main() {}
