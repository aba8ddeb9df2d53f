// syntax: compound assignment is a statement, not a value
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let mut a = 0;
    let b = (a += 1);
}

fn main() {}
