// shape: zeros needs compile-time dimensions
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let z = zeros::<f32>([n]);
}

fn main() {}
