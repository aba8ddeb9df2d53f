// Regression (was a macro bug): an unsupported meta-parameter type plus its declared value gives a second error `SCALE is not a meta-parameter of this kernel`.
use kernel_std::prelude::*;

#[kernel(SCALE = [2])]
fn k<const SCALE: f32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
