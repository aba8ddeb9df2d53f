// helper: helpers that call each other in a cycle
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn ping(x: Block) -> Block {
        pong(x)
    }

    #[helper]
    fn pong(x: Block) -> Block {
        ping(x)
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, ping(load(x + offs)));
    }
}

fn main() {}
