// syntax: a variable is initialized where it is declared
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y;
}

fn main() {}
