// Regression (was a macro bug): calling an `Option<Func>` meta-parameter directly compiles when every declared value is `Some(..)`; it is only an error in a `None` instance.
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    pub fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel(ACT = [Some(relu)])]
    pub fn k<const ACT: Option<Func>>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, ACT(load(x + offs)));
    }
}

fn main() {}
