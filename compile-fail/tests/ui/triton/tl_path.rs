// triton: `tl::load(...)` is `load(...)`
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(out + offs, tl::load(x + offs));
}

fn main() {}
