// shape: as_row of a scalar
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let row = n.as_row();
}

fn main() {}
