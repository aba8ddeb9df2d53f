// instances: a meta-parameter named twice in #[kernel(...)] (the second list would replace the first)
use kernel_std::prelude::*;

#[kernel(B = [64], B = [128])]
fn k<const B: i32>(x: Ptr<f32>) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs));
}

fn main() {}
