// load: `other` must broadcast to the pointer block
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs, offs < n, zeros::<f32>([32]));
}

fn main() {}
