// assign: `let` variables are immutable
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let acc = zeros::<f32>([16]);
    acc = acc + 1.0;
}

fn main() {}
