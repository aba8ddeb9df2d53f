// assign: `+=` on an immutable variable
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let i = 0;
    i += 1;
}

fn main() {}
