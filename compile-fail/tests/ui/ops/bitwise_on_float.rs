// ops: `&` is defined on masks and integers, not floats
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    let bits = v & v;
}

fn main() {}
