// reduce: a scalar has no axis to reduce
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let s = n.sum(0);
}

fn main() {}
