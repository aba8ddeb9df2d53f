// Regression (was a macro bug): a meta-parameter and a parameter with the same name compile; the meta-parameter silently shadows the parameter in the body.
use kernel_std::prelude::*;

#[kernel(n = [16])]
fn k<const n: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(x + offs, 1.0, offs < n);
}

fn main() {}
