// mask: the mask must broadcast to the pointer block's shape
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let wide = arange(0, 32);
    let v = load(x + offs, wide < n);
}

fn main() {}
