// instances: a bool value listed twice
use kernel_std::prelude::*;

#[kernel(MASKED = [true, false, true])]
fn k<const MASKED: bool>(x: Ptr<f32>) {
    let offs = arange(0, 16);
    store(x + offs, load(x + offs));
}

fn main() {}
