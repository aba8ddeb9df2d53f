// helper: errors inside a helper body are reported where the helper says them
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn bad(x: Block) -> Block {
        x & x
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, bad(load(x + offs)));
    }
}

fn main() {}
