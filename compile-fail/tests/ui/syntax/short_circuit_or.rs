// syntax: `||` is not supported (combine masks with `|`)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let m = offs < 4 || offs >= 12;
}

fn main() {}
