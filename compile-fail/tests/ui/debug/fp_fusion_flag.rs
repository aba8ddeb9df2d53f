// #[kernel(fp_fusion = ...)] takes true or false
use kernel_std::prelude::*;

#[kernel(fp_fusion = 1)]
fn k(x: Ptr<f32>) {
    store(x, load(x) * 2.0 + 1.0);
}

fn main() {}
