// Regression (was a macro bug): where_ between a pointer block and a value says `pointers only support +/- with integer offsets`.
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let p = where_(offs < n, x + offs, 0);
}

fn main() {}
