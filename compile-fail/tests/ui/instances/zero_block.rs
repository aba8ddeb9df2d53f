// instances: a block dimension of 0 is rejected in the instance that declares it
use kernel_std::prelude::*;

#[kernel(B = [16, 0])]
fn k<const B: i32>(x: Ptr<f32>) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs));
}

fn main() {}
