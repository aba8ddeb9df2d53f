// meta: a `Func` (not `Option<Func>`) meta-parameter cannot be None
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [relu, None])]
    fn k<const ACT: Func>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, ACT(load(x + offs)));
    }
}

fn main() {}
