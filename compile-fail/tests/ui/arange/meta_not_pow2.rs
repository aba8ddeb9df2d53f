// arange: BLOCK = 40 is a declared instance, and 40 is neither a power of two nor a multiple of 16
use kernel_std::prelude::*;

#[kernel(BLOCK = [16, 40])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
