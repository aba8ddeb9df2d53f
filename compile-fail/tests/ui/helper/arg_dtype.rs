// helper: a `Block<f16>` parameter takes f16 blocks only
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn half_up(x: Block<f16>) -> Block {
        x.to::<f32>()
    }

    #[kernel]
    fn k(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, half_up(load(x + offs)));
    }
}

fn main() {}
