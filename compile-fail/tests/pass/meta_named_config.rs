// Regression: a meta-parameter may be named `config` or `grid` (the generated launcher reserves `__` names only).
use kernel_std::prelude::*;

#[kernel(config = [16])]
fn k<const config: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, config);
    store(x + offs, 1.0, offs < n);
}

fn main() {}
