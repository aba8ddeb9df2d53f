// static_print: a warning at the call with the values of every instance (denied here, so the
// case fails), once when every instance prints the same
#![deny(deprecated)]
use kernel_std::prelude::*;

#[kernel(BLOCK = [16, 32])]
fn k<const BLOCK: i32>(x: Ptr<f32>) {
    static_print("BLOCK =", BLOCK, "bytes:", BLOCK * 4, BLOCK > 16);
    static_print("the same in every instance");
    store(x, 1.0);
}

fn main() {}
