// assign: a variable keeps its shape across `if` branches
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let mut v = zeros::<f32>([16]);
    if n > 0 {
        v = v.as_row();
    }
}

fn main() {}
