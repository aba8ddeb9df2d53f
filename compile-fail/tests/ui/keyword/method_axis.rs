// keyword: `x.sum(axis=0)` is written `x.sum(0)`
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let s = load(x + offs).sum(axis = 0);
    store(out, s);
}

fn main() {}
