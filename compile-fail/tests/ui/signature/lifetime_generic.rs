// signature: lifetime parameters are not supported
use kernel_std::prelude::*;

#[kernel]
fn k<'a>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
