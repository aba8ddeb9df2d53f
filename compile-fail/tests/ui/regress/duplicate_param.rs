// Regression (was a macro bug): duplicate parameter names are not rejected by the macro; rustc reports E0415/E0308 inside the generated code, at #[kernel].
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, x: i32) {
    let offs = arange(0, 16);
}

fn main() {}
