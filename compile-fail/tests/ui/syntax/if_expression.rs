// syntax: `if` is a statement, not a value (use where_)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let y = if n > 0 { 1 } else { 2 };
}

fn main() {}
