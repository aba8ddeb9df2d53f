// control: loop ranges need an end
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    for i in 0.. {
        return;
    }
}

fn main() {}
