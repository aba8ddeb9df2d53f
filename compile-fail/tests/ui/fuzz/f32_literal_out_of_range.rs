// Fuzz regression (was a macro panic): `1e39f32` is infinite as an f32, and the CPU code generator's `quote!` panicked on it (`assertion failed: f.is_finite()`); now a diagnostic, as in Rust.
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>) {
    store(x, 1e39f32);
}

fn main() {}
