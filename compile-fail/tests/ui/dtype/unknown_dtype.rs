// dtype: `.to::<T>()` needs a dtype of the block language
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = arange(0, 16).to::<f8>();
}

fn main() {}
