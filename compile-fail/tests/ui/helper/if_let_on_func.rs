// helper: a `Func` (not optional) meta-parameter is called directly, not tested with if let
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [relu])]
    fn k<const ACT: Func>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        let mut v = load(x + offs);
        if let Some(f) = ACT {
            v = f(v);
        }
        store(x + offs, v);
    }
}

fn main() {}
