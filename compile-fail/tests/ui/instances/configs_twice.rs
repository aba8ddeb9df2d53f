// instances: `configs` given twice in #[autotune]
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(B = 64)], configs = [config(B = 128)], key = [n])]
fn k<const B: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, B);
    store(x + offs, load(x + offs, offs < n), offs < n);
}

fn main() {}
