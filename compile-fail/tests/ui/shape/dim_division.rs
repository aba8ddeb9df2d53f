// shape: block sizes use + - * only
use kernel_std::prelude::*;

#[kernel(BLOCK = [16])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let z = zeros::<f32>([BLOCK / 2]);
}

fn main() {}
