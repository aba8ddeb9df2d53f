// dot: i8 operands sum in i32, so the accumulator is an i32 block, not f32
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<i8>, n: i32) {
    let a = load(x + arange(0, 16).as_col() * 16 + arange(0, 16).as_row());
    let acc = zeros::<f32>([16, 16]);
    let c = dot(a, a, acc);
}

fn main() {}
