// dot: operands must have one dtype (f16 with f32 is an error)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<f16>([16, 16]);
    let b = zeros::<f32>([16, 16]);
    let c = dot(a, b);
}

fn main() {}
