// math: `.exp()` takes no argument
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    let e = v.exp(2.0);
}

fn main() {}
