// helper: helpers are inlined, so they cannot call themselves
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn halve(x: Block) -> Block {
        halve(x * 0.5)
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, halve(load(x + offs)));
    }
}

fn main() {}
