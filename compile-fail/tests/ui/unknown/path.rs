// unknown: module paths are not values in kernels
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let pi = core::f32::consts::PI;
}

fn main() {}
