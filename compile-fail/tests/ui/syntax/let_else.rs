// syntax: `let ... else` is not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = n else { return; };
}

fn main() {}
