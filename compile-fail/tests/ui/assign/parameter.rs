// assign: parameters cannot be assigned (shadow them with `let`)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    n = n + 1;
}

fn main() {}
