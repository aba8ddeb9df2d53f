// syntax: items (here a const) are not supported inside a kernel
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    const TILE: i32 = 16;
    let offs = arange(0, 16);
}

fn main() {}
