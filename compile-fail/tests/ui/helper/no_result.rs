// helper: a helper ends with its result expression
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn double(x: Block) -> Block {
        let y = x * 2.0;
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, double(load(x + offs)));
    }
}

fn main() {}
