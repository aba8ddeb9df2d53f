// control: `start..=end` is not a kernel loop range
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    for i in 0..=n {
        let offs = arange(0, 16);
    }
}

fn main() {}
