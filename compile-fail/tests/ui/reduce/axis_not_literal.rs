// reduce: the axis is an integer literal
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let s = load(x + offs).max(n);
}

fn main() {}
