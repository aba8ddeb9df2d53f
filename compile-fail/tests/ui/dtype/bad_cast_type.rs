// dtype: `x as T` needs a dtype of the block language
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = n as usize;
}

fn main() {}
