// autotune: `configs = [...]` is required
use kernel_std::prelude::*;

#[kernel]
#[autotune(key = [n])]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
