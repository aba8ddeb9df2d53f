// meta: -16 is out of range for a `usize` meta-parameter
use kernel_std::prelude::*;

#[kernel(BLOCK = [16, -16])]
fn k<const BLOCK: usize>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
