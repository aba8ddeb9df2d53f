// syntax: macros like println! are not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    println!("n = {}", n);
}

fn main() {}
