// placement: #[kernel] on a trait method without a body says kernels are free functions
use kernel_std::prelude::*;

trait Kernels {
    #[kernel(BLOCK = [64])]
    fn add<const BLOCK: i32>(x: Ptr<f32>, n: i32);
}

fn main() {}
