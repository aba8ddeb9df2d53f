// autotune: a key must be a scalar parameter, not a pointer
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16)], key = [x])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
