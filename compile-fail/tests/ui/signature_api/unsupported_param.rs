// signature_api: a parameter of an unsupported type is reported once; the stub keeps it as a
// launch argument, so the correct call in `run` compiles, and statements using it are not checked
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK = [64])]
fn k<const BLOCK: i32>(x: Ptr<f32>, scale: u64, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, mask) * scale;
    store(x + offs, v, mask);
}

fn run(x: &Tensor<f32>, n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK),), x, 2u64, n, 64)
}

fn main() {
    let _ = run;
}
