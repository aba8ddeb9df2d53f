// shape: trans needs a 2-D block
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let t = offs.trans();
}

fn main() {}
