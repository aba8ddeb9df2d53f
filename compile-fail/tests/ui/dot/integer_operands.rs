// dot: operands are f16, bf16 or f32, not integers
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<i32>([16, 16]);
    let b = zeros::<i32>([16, 16]);
    let c = dot(a, b);
}

fn main() {}
