// assign: only variables are assignment targets (write memory with store)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    *x = 1.0;
}

fn main() {}
