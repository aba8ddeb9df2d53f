// program: the axis is an integer literal
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let pid = num_programs(n);
}

fn main() {}
