// control: a literal zero step in range(start, end, step)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    for i in range(n, 0, 0) {
        let offs = arange(0, 16);
    }
}

fn main() {}
