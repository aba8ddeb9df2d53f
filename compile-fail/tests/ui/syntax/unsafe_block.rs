// syntax: `unsafe` blocks are not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let v = unsafe { n };
}

fn main() {}
