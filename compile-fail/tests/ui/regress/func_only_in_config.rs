// Regression (was a macro bug): a function meta-parameter set in an autotune config gets its error and also `ACT has no declared values`.
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel]
    #[autotune(configs = [config(ACT = relu)], key = [n])]
    fn k<const ACT: Func>(x: Ptr<f32>, n: i32) {
        let offs = arange(0, 16);
        store(x + offs, ACT(load(x + offs)));
    }
}

fn main() {}
