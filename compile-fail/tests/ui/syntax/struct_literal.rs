// syntax: struct literals are not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let r = Range { start: 0, end: n };
}

fn main() {}
