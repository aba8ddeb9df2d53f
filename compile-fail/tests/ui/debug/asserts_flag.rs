// #[kernel(asserts = ...)] takes true or false
use kernel_std::prelude::*;

#[kernel(asserts = 0)]
fn k(x: Ptr<f32>) {
    device_assert(load(x) > 0.0);
}

fn main() {}
