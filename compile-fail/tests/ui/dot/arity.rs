// dot: takes (a, b) or (a, b, acc)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<f32>([16, 16]);
    let c = dot(a);
}

fn main() {}
