// load: `other` must have the pointer's dtype
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f16>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs, offs < n, 0.0f32);
}

fn main() {}
