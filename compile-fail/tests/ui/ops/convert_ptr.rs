// ops: pointers cannot be converted with `.to::<T>()`
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let p = x.to::<i64>();
}

fn main() {}
