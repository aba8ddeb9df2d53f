// control: kernels return nothing (`return;` only)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    if n > 0 {
        return 1;
    }
}

fn main() {}
