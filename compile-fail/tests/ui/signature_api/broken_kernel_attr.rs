// signature_api: a syntax error in #[kernel(...)] is reported, the body's error too, and the
// correct call in `run` compiles
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK: [64, 128])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, offs);
    store(x + offs, v, mask);
}

fn run(x: &Tensor<f32>, n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK),), x, n, 64)
}

fn main() {
    let _ = run;
}
