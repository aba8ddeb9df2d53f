// More than 64 instances: a warning at the kernel's name (denied here, so the case fails).
#![deny(deprecated)]
use kernel_std::prelude::*;

#[kernel(
    A = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13],
    B = [1, 2, 3, 4, 5]
)]
fn k<const A: i32, const B: i32>(x: Ptr<f32>) {
    store(x, 1.0);
}

// 64 instances: no warning.
#[kernel(C = [1, 2, 3, 4, 5, 6, 7, 8], D = [1, 2, 3, 4, 5, 6, 7, 8])]
fn at_the_limit<const C: i32, const D: i32>(x: Ptr<f32>) {
    store(x, 1.0);
}

fn main() {}
