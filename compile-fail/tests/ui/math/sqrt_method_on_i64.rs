// math: `.sqrt()` needs a float
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, m: i64) {
    let r = m.sqrt();
}

fn main() {}
