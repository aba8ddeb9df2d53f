// reduce: axis 1 of a 1-D block
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let s = load(x + offs).sum(1);
}

fn main() {}
