// control: `if` needs a bool, not an i32
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    if n {
        return;
    }
}

fn main() {}
