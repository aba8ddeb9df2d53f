// ops: `<<` is defined on integers only
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    let y = v << 1;
}

fn main() {}
