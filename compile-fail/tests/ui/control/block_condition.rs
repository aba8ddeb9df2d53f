// control: `if` on a block of bools (use where_)
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    if offs < n {
        return;
    }
}

fn main() {}
