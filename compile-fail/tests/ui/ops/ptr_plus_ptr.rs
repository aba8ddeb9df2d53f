// ops: two pointers cannot be added
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, y: Ptr<f32>) {
    let offs = arange(0, 16);
    let p = x + offs + y;
}

fn main() {}
