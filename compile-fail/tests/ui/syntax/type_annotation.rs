// syntax: variables are not annotated (types are inferred)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let m: i32 = n * 2;
}

fn main() {}
