// dot: the accumulator must be f32
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<f16>([16, 16]);
    let b = zeros::<f16>([16, 16]);
    let acc = zeros::<f16>([16, 16]);
    let c = dot(a, b, acc);
}

fn main() {}
