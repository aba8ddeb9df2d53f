// store: is a statement and has no value
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let r = store(x + offs, 1.0);
}

fn main() {}
