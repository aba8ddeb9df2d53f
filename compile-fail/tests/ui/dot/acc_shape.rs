// dot: the accumulator must have the product's shape [M, N]
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<f16>([16, 32]);
    let b = zeros::<f16>([32, 64]);
    let acc = zeros::<f32>([16, 32]);
    let c = dot(a, b, acc);
}

fn main() {}
