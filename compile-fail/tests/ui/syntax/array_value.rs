// syntax: arrays are only block shapes
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let xs = [1, 2, 3, 4];
}

fn main() {}
