// signature_api: an unknown helper in #[kernel(ACT = [...])] is reported; statements using
// `ACT` are not checked (it has no declared value), the rest are, and `run` compiles
use kernel_runtime::{cdiv, Func, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel_module]
mod kernels {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(BLOCK = [64], ACT = [None, Some(rleu)])]
    pub fn k<const BLOCK: i32, const ACT: Option<Func>>(x: Ptr<f32>, n: i32) {
        let offs = program_id(0) * BLOCK + arange(0, BLOCK);
        let mask = offs < n;
        let mut v = load(x + offs, mask);
        if let Some(f) = ACT {
            v = f(v);
        }
        let bad = load(x + offs, offs);
        store(x + offs, v, mask);
    }
}

fn run(x: &Tensor<f32>, n: i32, act: Option<Func>) -> Result<(), LaunchError> {
    kernels::k::launch(|m: &kernels::k::Meta| (cdiv(n, m.BLOCK),), x, n, 64, act)
}

fn main() {
    let _ = run;
}
