// broadcast: the branches of where_ must broadcast together
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = arange(0, 16);
    let b = arange(0, 32);
    let c = where_(a < n, a, b);
}

fn main() {}
