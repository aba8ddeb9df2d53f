// meta: a meta-parameter cannot be f32
use kernel_std::prelude::*;

#[kernel]
fn k<const SCALE: f32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
