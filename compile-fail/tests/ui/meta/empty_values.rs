// meta: a declared value list is not empty
use kernel_std::prelude::*;

#[kernel(BLOCK = [])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
