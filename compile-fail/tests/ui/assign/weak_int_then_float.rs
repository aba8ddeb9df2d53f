// assign: `let mut i = 0` is i32, so `i = i + 0.5` (f32) changes its dtype
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let mut i = 0;
    i = i + 0.5;
}

fn main() {}
