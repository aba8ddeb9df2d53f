// ops: pointer offsets must be integers
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let p = x + offs.to::<f32>();
}

fn main() {}
