// meta: attribute values are integers, `true`/`false` or helper names, not 4.5
use kernel_std::prelude::*;

#[kernel(num_warps = 4.5)]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
}

fn main() {}
