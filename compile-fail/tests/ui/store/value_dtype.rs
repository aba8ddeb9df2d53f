// store: an f32 value through Ptr<f16> needs `.to::<f16>()`
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f16>) {
    let offs = arange(0, 16);
    store(out + offs, load(x + offs));
}

fn main() {}
