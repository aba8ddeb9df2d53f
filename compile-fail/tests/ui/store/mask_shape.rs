// store: the mask must broadcast to the pointer block
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let wide = arange(0, 32);
    store(x + offs, 1.0, wide < n);
}

fn main() {}
