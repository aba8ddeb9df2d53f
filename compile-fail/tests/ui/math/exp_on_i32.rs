// math: exp needs a float; a strong i32 block is not converted implicitly
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let e = exp(offs);
}

fn main() {}
