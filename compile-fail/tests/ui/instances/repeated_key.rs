// instances: an autotune key listed twice
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(B = 64), config(B = 128)], key = [n, n])]
fn k<const B: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs, offs < n), offs < n);
}

fn main() {}
