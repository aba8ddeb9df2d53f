// keyword: Triton's `load(p, mask=m)` is written positionally
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let mask = offs < n;
    let v = load(x + offs, mask = mask);
    store(out + offs, v, mask);
}

fn main() {}
