// control: loop bounds are scalars, not blocks
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    for i in 0..offs {
        let y = i;
    }
}

fn main() {}
