// instances: a helper listed twice as a function meta value (`relu` and `Some(relu)` are one value)
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [None, Some(relu), relu])]
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
