// meta: function meta-parameters are chosen at launch, not by autotune
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [relu])]
    #[autotune(configs = [config(ACT = relu)], key = [n])]
    fn k<const ACT: Func>(x: Ptr<f32>, n: i32) {
        let offs = arange(0, 16);
        store(x + offs, ACT(load(x + offs)));
    }
}

fn main() {}
