// control: `if let` only tests an optional function meta-parameter
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    if let Some(m) = n {
        return;
    }
}

fn main() {}
