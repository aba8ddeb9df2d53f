// autotune: the arguments are `configs` and `key`
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(num_warps = 4)], keys = [n])]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
