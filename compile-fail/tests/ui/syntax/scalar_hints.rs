// syntax: a scalar `multiple_of` takes an integer or a pointer and a positive compile-time divisor
use kernel_std::prelude::*;

#[kernel(B = [64, 48])]
fn k<const B: i32>(x: Ptr<f32>, n: i32, f: f32) {
    let a = multiple_of(n, 0);
    let b = multiple_of(n, n);
    let c = multiple_of(f, 8);
    let d = multiple_of(n, B - 48);
    let e = multiple_of(x + arange(0, 16), 16);
    let g = multiple_of(x, 16, 2);
}

fn main() {}
