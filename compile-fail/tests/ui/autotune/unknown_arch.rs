// autotune: a config's `archs` name the device architectures the build knows
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, archs = [sm_90a]), config(BLOCK = 32, archs = [sm_86])], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
