// syntax: `loop` is not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    loop {
        return;
    }
}

fn main() {}
