// store: broadcasting may not grow the pointer block ([16] <- [16, 16])
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    store(x + offs, zeros::<f32>([16, 16]));
}

fn main() {}
