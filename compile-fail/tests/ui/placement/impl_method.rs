// placement: #[kernel] on a method taking `self` says kernels are free functions
use kernel_std::prelude::*;

struct Adder;

impl Adder {
    #[kernel(BLOCK = [64])]
    fn add<const BLOCK: i32>(&self, x: Ptr<f32>, n: i32) {
        let offs = arange(0, BLOCK);
        store(x + offs, load(x + offs, offs < n), offs < n);
    }
}

fn main() {}
