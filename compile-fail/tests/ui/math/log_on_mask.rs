// math: log of a mask
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let l = log(offs < n);
}

fn main() {}
