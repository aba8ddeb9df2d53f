// instances: a value listed twice would define one device entry twice
use kernel_std::prelude::*;

#[kernel(B = [64, 64, 128])]
fn k<const B: i32>(x: Ptr<f32>) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs));
}

fn main() {}
