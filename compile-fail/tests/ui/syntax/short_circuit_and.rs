// syntax: `&&` is not supported (combine masks with `&`)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let m = offs < n && offs >= 0;
}

fn main() {}
