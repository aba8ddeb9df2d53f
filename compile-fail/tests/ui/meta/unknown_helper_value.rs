// meta: a function meta value must name a #[helper] of the module
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [None, Some(gelu)])]
    fn k<const ACT: Option<Func>>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        let mut v = load(x + offs);
        if let Some(f) = ACT {
            v = f(v);
        }
        store(x + offs, v);
    }
}

fn main() {}
