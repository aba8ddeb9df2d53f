// an 8-bit float is not a scalar parameter: pass an f32 and convert it in the kernel
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f8e4m3>, scale: f8e4m3) {
    store(x, load(x) * scale);
}

fn main() {}
