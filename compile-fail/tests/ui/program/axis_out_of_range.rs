// program: grids have axes 0, 1 and 2
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let pid = program_id(3);
}

fn main() {}
