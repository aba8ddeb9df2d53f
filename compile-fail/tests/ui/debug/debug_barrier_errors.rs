// debug_barrier: a statement without arguments
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>) {
    debug_barrier(1);
    let b = debug_barrier();
}

fn main() {}
