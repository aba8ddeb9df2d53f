// load: takes (pointers), (pointers, mask) or (pointers, mask, other)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs, offs < n, 0.0, 1.0);
}

fn main() {}
