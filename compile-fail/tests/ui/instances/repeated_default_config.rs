// instances: two configs that differ only in spelling defaults (num_stages = 3 is the default)
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(B = 64), config(B = 64, num_warps = 4, num_stages = 3)], key = [n])]
fn k<const B: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs, offs < n), offs < n);
}

fn main() {}
