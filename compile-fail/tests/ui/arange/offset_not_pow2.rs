// arange: the length is end - start (BLOCK - 1 is 15)
use kernel_std::prelude::*;

#[kernel(BLOCK = [16])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(1, BLOCK);
}

fn main() {}
