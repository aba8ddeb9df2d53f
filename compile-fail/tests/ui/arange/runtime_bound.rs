// arange: bounds must be compile-time (literals and meta-parameters)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, n);
}

fn main() {}
