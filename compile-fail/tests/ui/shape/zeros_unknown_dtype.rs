// shape: the turbofish of zeros is a dtype
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let z = zeros::<u64>([16]);
}

fn main() {}
