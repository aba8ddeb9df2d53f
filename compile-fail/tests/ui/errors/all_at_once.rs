// errors: three independent mistakes in one kernel are all reported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let big = arange(0, 24);
    let v = load(x + offs.to::<f32>());
    while offs < n {
        return;
    }
}

fn main() {}
