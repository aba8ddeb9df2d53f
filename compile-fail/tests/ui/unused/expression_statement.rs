// unused: an expression statement with no effect
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    v + 1.0;
    store(out + offs, v);
}

fn main() {}
