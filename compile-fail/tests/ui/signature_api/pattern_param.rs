// signature_api: a pattern parameter is reported; the stub keeps an argument in its place, so
// the correct call in `run` compiles
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK = [64])]
fn k<const BLOCK: i32>(x: Ptr<f32>, (lo, hi): (i32, i32)) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < hi;
    store(x + offs, load(x + offs, mask), mask);
}

fn run(x: &Tensor<f32>, n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK),), x, (0, n), 64)
}

fn main() {
    let _ = run;
}
