// meta: a meta-parameter is chosen either by autotune or at launch, not both
use kernel_std::prelude::*;

#[kernel(BLOCK = [16])]
#[autotune(configs = [config(BLOCK = 32)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
