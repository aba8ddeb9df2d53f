// syntax: indexing `x[0]` is not supported (use as_col/as_row or load)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let first = offs[0];
}

fn main() {}
