// instances: num_warps given twice in #[kernel(...)]
use kernel_std::prelude::*;

#[kernel(num_warps = 4, num_warps = 8)]
fn k(x: Ptr<f32>) {
    let offs = arange(0, 16);
    store(x + offs, load(x + offs));
}

fn main() {}
