// reduce: Triton's `x.sum(-1)` names the last axis; here axes are non-negative
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs.as_col() * 16 + offs.as_row());
    let s = v.sum(-1);
    store(out + offs, s);
}

fn main() {}
