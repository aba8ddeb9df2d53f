// dot: an 8-bit float operand goes with another 8-bit float (either format), not with f16
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f8e4m3>, y: Ptr<f16>) {
    let i = arange(0, 16).as_col() * 16 + arange(0, 16).as_row();
    let c = dot(load(x + i), load(y + i));
}

fn main() {}
