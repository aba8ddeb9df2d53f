// syntax: items (here a nested fn) are not supported inside a kernel
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    fn twice(v: i32) -> i32 {
        v * 2
    }
}

fn main() {}
