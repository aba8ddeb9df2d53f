// Regression (was a macro bug): an integer literal dimension that does not fit i64 is silently poisoned (lower_dim uses `.ok()`), no macro error is recorded, and the generated code fails with E0277 `(): Cast` at #[kernel].
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 99999999999999999999);
}

fn main() {}
