// Regression (was a macro bug): `Dim::add` overflows on a block size expression (`custom attribute panicked: attempt to add with overflow`).
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let z = zeros::<f32>([9223372036854775807 + 1]);
}

fn main() {}
