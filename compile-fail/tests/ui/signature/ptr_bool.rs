// signature: Ptr<bool> is not a buffer type
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<bool>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
