// autotune: `archs` takes architecture names
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, archs = [90])], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
