// instances: the same autotune config twice would be compiled and timed twice
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(B = 64, num_warps = 4), config(B = 128, num_warps = 4), config(num_warps = 4, B = 64)], key = [n])]
fn k<const B: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs, offs < n), offs < n);
}

fn main() {}
