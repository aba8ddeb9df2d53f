// mask: a load mask must be a bool block (from a comparison)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs, offs);
}

fn main() {}
