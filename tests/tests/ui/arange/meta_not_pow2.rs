// arange: BLOCK = 48 is a declared instance, and 48 is not a power of two
use kernel_std::prelude::*;

#[kernel(BLOCK = [16, 48])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
