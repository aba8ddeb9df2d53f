// triton: `tl.arange(...)` is `arange(...)`: the block language is in scope without a prefix
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = tl.arange(0, 16);
    store(out + offs, load(x + offs));
}

fn main() {}
