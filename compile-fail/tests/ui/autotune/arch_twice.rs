// autotune: a config names each architecture once
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, archs = [sm_90a, sm_90a])], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
