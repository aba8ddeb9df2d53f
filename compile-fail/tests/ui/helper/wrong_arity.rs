// helper: a call passes as many arguments as the helper takes
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn leaky_relu(x: Block) -> Block {
        where_(x >= 0.0, x, 0.01 * x)
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, leaky_relu(load(x + offs), 0.01));
    }
}

fn main() {}
