// dtype: integer literal suffixes must be dtypes
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = arange(0, 16) + 1u64;
}

fn main() {}
