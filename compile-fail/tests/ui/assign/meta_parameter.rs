// assign: meta-parameters are compile-time constants
use kernel_std::prelude::*;

#[kernel(BLOCK = [16])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    BLOCK = 32;
}

fn main() {}
