// Regression (was a macro bug): `Dim::mul` overflows on a block size expression (`custom attribute panicked: attempt to multiply with overflow`).
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let z = zeros::<f32>([4611686018427387904 * 4]);
}

fn main() {}
