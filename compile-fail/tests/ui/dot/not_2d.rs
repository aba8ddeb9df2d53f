// dot: both operands must be 2-D blocks
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<f32>([16]);
    let b = zeros::<f32>([16, 16]);
    let c = dot(a, b);
}

fn main() {}
