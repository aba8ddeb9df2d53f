// control: loop bounds are integer scalars
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, scale: f32) {
    for i in 0..scale {
        let offs = arange(0, 16);
    }
}

fn main() {}
