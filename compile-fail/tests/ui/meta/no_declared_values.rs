// meta: every meta-parameter needs declared values
use kernel_std::prelude::*;

#[kernel]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
