// signature_api: a float meta-parameter is reported; statements using it are not checked, the
// body's other error is, and the correct call in `run` compiles
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK = [64])]
fn k<const BLOCK: i32, const SCALE: f32>(x: Ptr<f32>, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, offs);
    store(x + offs, v * SCALE, mask);
}

fn run(x: &Tensor<f32>, n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK),), x, n, 64, 0.5)
}

fn main() {
    let _ = run;
}
