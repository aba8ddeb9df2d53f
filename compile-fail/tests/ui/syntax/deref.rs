// syntax: dereferencing is not supported (use load)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let v = *x;
}

fn main() {}
