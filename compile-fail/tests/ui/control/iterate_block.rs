// control: loops iterate over ranges, not blocks
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    for i in offs {
        let y = i;
    }
}

fn main() {}
