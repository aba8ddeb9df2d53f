// shape: [BLOCK] cannot be reshaped to [BLOCK, 2]
use kernel_std::prelude::*;

#[kernel(BLOCK = [16])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
    let tile = offs.reshape([BLOCK, 2]);
}

fn main() {}
