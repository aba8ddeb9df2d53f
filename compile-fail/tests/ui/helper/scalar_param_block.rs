// helper: a scalar parameter (f32) does not take a block
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn scale(x: Block, s: f32) -> Block {
        x * s
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        let v = load(x + offs);
        store(x + offs, scale(v, v));
    }
}

fn main() {}
