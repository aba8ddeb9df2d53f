// helper: macros are rejected in helpers even when no kernel calls them
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn noisy(x: Block) -> Block {
        println!("hi");
        x
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, load(x + offs));
    }
}

fn main() {}
