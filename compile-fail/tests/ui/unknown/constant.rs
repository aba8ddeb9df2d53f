// unknown: f32::EPSILON is not a supported constant
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let eps = f32::EPSILON;
}

fn main() {}
