// signature_api: a meta-parameter of an unsupported integer type is reported once; `Meta` keeps
// the field and `launch` the argument as written, so the correct call in `run` compiles
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK = [64])]
fn k<const BLOCK: u8>(x: Ptr<f32>, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    store(x + offs, load(x + offs, mask) * 2.0, mask);
}

fn run(x: &Tensor<f32>, n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK as i32),), x, n, 64)
}

fn main() {
    let _ = run;
}
