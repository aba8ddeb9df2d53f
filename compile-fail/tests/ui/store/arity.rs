// store: takes (pointers, value) or (pointers, value, mask)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(x + offs);
}

fn main() {}
