// helper: a function of the module without #[helper] cannot be called from a kernel
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    fn square(x: Block) -> Block {
        x * x
    }

    #[kernel]
    fn k(x: Ptr<f32>, out: Ptr<f32>) {
        let offs = arange(0, 16);
        store(out + offs, square(load(x + offs)));
    }
}

fn main() {}
