// shape: expand_dims axis beyond the rank
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let e = offs.expand_dims(2);
}

fn main() {}
