// program: program_id takes one axis
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let pid = program_id();
}

fn main() {}
