// ops: pointers cannot be negated
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let p = -x;
}

fn main() {}
