// signature: `&[f32]` is not a kernel parameter type (use Ptr<f32>)
use kernel_std::prelude::*;

#[kernel]
fn k(x: &[f32], n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
