// store: the first argument must be pointers
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(offs, 1.0);
}

fn main() {}
