// meta: a bool meta-parameter takes true or false
use kernel_std::prelude::*;

#[kernel(EVEN = [1])]
fn k<const EVEN: bool>(x: Ptr<f32>, n: i32) {
    if EVEN {
        return;
    }
}

fn main() {}
