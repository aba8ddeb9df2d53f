// meta: 2^32 does not fit an `i32` meta-parameter
use kernel_std::prelude::*;

#[kernel(BLOCK = [4294967296])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
