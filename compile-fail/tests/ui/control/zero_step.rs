// control: a literal zero loop step
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    for i in (0..n).step_by(0) {
        let offs = arange(0, 16);
    }
}

fn main() {}
