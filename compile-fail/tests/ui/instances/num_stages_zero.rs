// instances: num_stages is at least 1
use kernel_std::prelude::*;

#[kernel(num_stages = 0)]
fn k(x: Ptr<f32>) {
    let offs = arange(0, 16);
    store(x + offs, load(x + offs));
}

fn main() {}
