// signature: scalar parameters are i32, u32, i64, f32 or bool
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, scale: f16) {
    let offs = arange(0, 16);
}

fn main() {}
