// shape: a shape is written [d0, d1, ...]
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let z = zeros::<f32>(16);
}

fn main() {}
