// signature: type parameters are not supported (meta-parameters are consts)
use kernel_std::prelude::*;

#[kernel]
fn k<T>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
