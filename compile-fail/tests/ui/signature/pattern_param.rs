// signature: parameters are plain names
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, (m, n): (i32, i32)) {
    let offs = arange(0, 16);
}

fn main() {}
