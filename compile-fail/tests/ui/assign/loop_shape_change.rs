// assign: a loop-carried variable keeps its shape
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let mut acc = zeros::<f32>([16]);
    for i in 0..n {
        acc = zeros::<f32>([16, 16]);
    }
}

fn main() {}
