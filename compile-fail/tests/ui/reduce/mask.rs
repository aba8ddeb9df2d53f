// reduce: masks are not summed (convert them first)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let count = (offs < n).sum(0);
}

fn main() {}
