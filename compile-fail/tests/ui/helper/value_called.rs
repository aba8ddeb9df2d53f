// helper: a scalar parameter is not a function
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = n(1);
}

fn main() {}
