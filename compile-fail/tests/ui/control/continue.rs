// control: `continue` is not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    for i in 0..n {
        continue;
    }
}

fn main() {}
