// Regression (was a macro bug): a macro in a helper that a kernel calls is reported twice at the same span, with two different messages (module syntax pass and lowering).
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
        store(x + offs, noisy(load(x + offs)));
    }
}

fn main() {}
