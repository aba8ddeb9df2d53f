// syntax: ranges outside a `for` loop (use arange)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let r = 0..16;
}

fn main() {}
