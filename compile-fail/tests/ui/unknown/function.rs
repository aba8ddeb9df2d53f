// unknown: a function that is neither a builtin nor a helper
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let y = softplus(offs);
}

fn main() {}
