// syntax: tuples are only block shapes
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let pair = (n, n);
}

fn main() {}
