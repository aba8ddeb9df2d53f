// Regression (was a macro bug): one bad value in #[kernel(...)] discards the whole attribute, so a second error says `BLOCK` has no declared values.
use kernel_std::prelude::*;

#[kernel(BLOCK = [1.5])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
