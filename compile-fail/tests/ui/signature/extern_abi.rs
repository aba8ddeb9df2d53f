// signature: kernels cannot declare an ABI
use kernel_std::prelude::*;

#[kernel]
extern "C" fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
