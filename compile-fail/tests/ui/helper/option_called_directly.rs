// helper: an `Option<Func>` meta-parameter is called through `if let Some(f) = ACT`
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [None, Some(relu)])]
    fn k<const ACT: Option<Func>>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, ACT(load(x + offs)));
    }
}

fn main() {}
