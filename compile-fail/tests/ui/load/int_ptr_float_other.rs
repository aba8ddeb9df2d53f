// load: a float `other` does not fit Ptr<i32>
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<i32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs, offs < n, 0.5);
}

fn main() {}
