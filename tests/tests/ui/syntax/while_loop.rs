// syntax: `while` loops are not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let mut i = 0;
    while i < n {
        i += 1;
    }
}

fn main() {}
