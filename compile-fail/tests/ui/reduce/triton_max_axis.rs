// reduce: Triton's `tl.max(x, 0)` is a reduction; `max(block, 0)` here would be an elementwise
// maximum, so it is an error that names both spellings
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    store(out, max(v, 0));
    store(out + 1, min(v, -1));
    store(out + offs, max(v, 0.0));
}

fn main() {}
