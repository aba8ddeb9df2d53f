// dot: [M, K] x [K, N] needs equal inner dimensions
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<f16>([16, 32]);
    let b = zeros::<f16>([16, 16]);
    let c = dot(a, b);
}

fn main() {}
