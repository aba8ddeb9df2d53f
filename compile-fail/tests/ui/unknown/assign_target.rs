// unknown: assigning to a variable that was never declared
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    total = n + 1;
}

fn main() {}
