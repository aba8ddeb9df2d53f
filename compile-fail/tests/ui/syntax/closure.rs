// syntax: closures are not supported (use a #[helper])
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let twice = |v: i32| v * 2;
}

fn main() {}
