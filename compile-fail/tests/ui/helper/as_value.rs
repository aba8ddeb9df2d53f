// helper: a helper is called, not used as a value
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn relu(x: Block) -> Block {
        maximum(x, 0.0)
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let f = relu;
    }
}

fn main() {}
