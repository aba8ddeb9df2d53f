// shape: broadcast_to cannot change a non-unit dimension
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let b = offs.broadcast_to([32]);
}

fn main() {}
