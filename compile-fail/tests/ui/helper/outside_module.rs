// helper: #[helper] only means something inside a #[kernel_module]
use kernel_std::prelude::*;

#[helper]
fn leaky_relu(x: Block) -> Block {
    where_(x >= 0.0, x, 0.01 * x)
}

fn main() {}
