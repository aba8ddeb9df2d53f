// shape: the fill value of full is a scalar
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let f = full::<i32>([16], offs);
}

fn main() {}
