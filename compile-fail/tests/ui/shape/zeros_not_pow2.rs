// shape: block dimensions are powers of two or multiples of 16
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let z = zeros::<f32>([16, 12]);
}

fn main() {}
