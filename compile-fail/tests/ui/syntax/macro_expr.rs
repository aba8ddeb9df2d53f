// syntax: macros are not supported in expressions either
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16) + dbg!(n);
}

fn main() {}
