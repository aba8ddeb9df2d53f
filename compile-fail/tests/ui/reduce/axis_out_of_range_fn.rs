// reduce: axis 2 of a 2-D block, function form
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let v = zeros::<f32>([16, 16]);
    let s = sum(v, 2);
}

fn main() {}
