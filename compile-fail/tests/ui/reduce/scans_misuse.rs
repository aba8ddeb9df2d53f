// reduce: scans and index reductions check the axis, the `reverse` flag and the dtype
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<i32>) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    let a = cumsum(v, 0, 1);
    let b = v.xor_sum(0);
    let c = argmax(v.sum(0), 0);
    let d = v.cumprod(1);
    let e = cumsum(offs < 3);
    store(out, v.argmin(0));
}

fn main() {}
