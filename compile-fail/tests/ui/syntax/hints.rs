// syntax: Triton's hints take integer offsets and positive compile-time integers, one per axis
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let a = multiple_of(offs, 0);
    let b = max_contiguous(offs, [16, 16]);
    let c = multiple_of(load(x + offs), 16);
    let d = max_constancy(offs, n);
}

fn main() {}
