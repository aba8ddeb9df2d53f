// Regression (was a macro bug): a weak literal that does not fit the dtype it adopts (3000000000 as i32) compiles silently.
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<i32>, n: i32) {
    let offs = arange(0, 16);
    store(x + offs, offs + 3000000000);
}

fn main() {}
