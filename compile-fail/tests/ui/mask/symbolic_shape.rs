// mask: a [BLOCK_N] mask does not fit a [BLOCK_M] pointer block
use kernel_std::prelude::*;

#[kernel(BLOCK_M = [16], BLOCK_N = [16])]
fn k<const BLOCK_M: i32, const BLOCK_N: i32>(x: Ptr<f32>, n: i32) {
    let rows = arange(0, BLOCK_M);
    let cols = arange(0, BLOCK_N);
    let v = load(x + rows, cols < n);
}

fn main() {}
