// dot: operands are loaded values, not pointer blocks
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16).as_col() * 16 + arange(0, 16).as_row();
    let a = load(x + offs);
    let c = dot(a, x + offs);
}

fn main() {}
