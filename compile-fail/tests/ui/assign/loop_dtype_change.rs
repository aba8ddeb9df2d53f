// assign: a loop-carried variable keeps its dtype
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let mut acc = zeros::<f32>([16]);
    for i in 0..n {
        acc = acc.to::<f16>();
    }
}

fn main() {}
