// signature: only doc comments and #[autotune] may sit on a kernel
use kernel_std::prelude::*;

#[kernel]
#[inline]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
