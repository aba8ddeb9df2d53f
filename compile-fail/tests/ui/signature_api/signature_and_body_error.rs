// signature_api: a signature error and an unrelated body error are both reported; the body's
// uses of the bad parameter (and of what is computed from it) are not, and `run` compiles
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK = [64])]
fn k<const BLOCK: i32>(x: Ptr<f32>, y: &[f32], n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let w = load(y + offs, mask);
    let v = load(x + offs, mask);
    store(x + offs, v + w, mask);
    store(x + offs, v + 1, offs);
}

fn run(x: &Tensor<f32>, y: &[f32], n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK),), x, y, n, 64)
}

fn main() {
    let _ = run;
}
