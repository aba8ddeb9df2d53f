// store: the mask must be a bool block
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(x + offs, 1.0, offs);
}

fn main() {}
