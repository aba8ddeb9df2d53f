// shape: reshape keeps the number of elements
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let tile = offs.reshape([4, 8]);
}

fn main() {}
