// syntax: only named functions can be called
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let v = (exp)(1.0);
}

fn main() {}
