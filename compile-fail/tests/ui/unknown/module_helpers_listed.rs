// unknown: the module's own helpers are listed with the builtins
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn leaky_relu(x: Block) -> Block {
        where_(x >= 0.0, x, 0.01 * x)
    }

    #[helper]
    fn square(x: Block) -> Block {
        x * x
    }

    #[kernel]
    fn k(x: Ptr<f32>, out: Ptr<f32>) {
        let offs = arange(0, 16);
        store(out + offs, softplus(load(x + offs)));
    }
}

fn main() {}
