// instances: -1 does not fit a `u32` meta-parameter
use kernel_std::prelude::*;

#[kernel(B = [16, -1])]
fn k<const B: u32>(x: Ptr<f32>) {
    let offs = arange(0, 16);
    store(x + offs, load(x + offs));
}

fn main() {}
