// unused: a value at the end of the kernel is computed for nothing: store it
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    v * 2.0
}

fn main() {}
