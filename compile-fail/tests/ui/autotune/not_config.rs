// autotune: each entry of `configs` is `config(...)`
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [Config(num_warps = 4)], key = [n])]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
