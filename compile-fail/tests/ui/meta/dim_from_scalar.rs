// meta: block sizes come from meta-parameters, not bool ones
use kernel_std::prelude::*;

#[kernel(EVEN = [true])]
fn k<const EVEN: bool>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, EVEN);
}

fn main() {}
