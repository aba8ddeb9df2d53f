// syntax: only `let name = ...` patterns
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let (a, b) = (n, n);
}

fn main() {}
