// signature_api: a syntax error in #[autotune] is reported; `launch` still takes no tuned
// meta-parameter and `Meta` has it, so the correct call in `run` compiles; the body's error is reported
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 64, num_warps = 2), config(BLOCK = 128 num_warps = 4)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offs < n;
    let v = load(x + offs, offs);
    store(x + offs, v, mask);
}

fn run(x: &Tensor<f32>, n: i32) -> Result<(), LaunchError> {
    k::launch(|m: &k::Meta| (cdiv(n, m.BLOCK),), x, n)
}

fn main() {
    let _ = run;
}
