// ops: pointers support only `ptr + offsets` and `ptr - offsets`
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let p = x * 2;
}

fn main() {}
