// signature: scalar parameters are f32, f64, i8, i16, i32, i64, u8, u16, u32 or bool (no f16)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, scale: f16) {
    let offs = arange(0, 16);
}

fn main() {}
