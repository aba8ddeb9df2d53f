// triton: Python's `x ** 2` parses in Rust as `x * (*2)`: there is no power operator
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    store(out + offs, v ** 2);
}

fn main() {}
