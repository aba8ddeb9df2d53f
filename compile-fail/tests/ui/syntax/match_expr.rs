// syntax: `match` is not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = match n {
        0 => 1,
        _ => 2,
    };
}

fn main() {}
