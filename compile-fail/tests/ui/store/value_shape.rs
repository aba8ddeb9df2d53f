// store: the value must broadcast to the pointer block's shape
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(x + offs, zeros::<f32>([32]));
}

fn main() {}
