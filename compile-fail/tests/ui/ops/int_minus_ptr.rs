// ops: `offsets - ptr` is not defined
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let p = offs - x;
}

fn main() {}
