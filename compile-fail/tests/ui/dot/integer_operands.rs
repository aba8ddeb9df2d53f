// dot: integer operands are i8 or u8 (i32 sums), not i32
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let a = zeros::<i32>([16, 16]);
    let b = zeros::<i32>([16, 16]);
    let c = dot(a, b);
}

fn main() {}
