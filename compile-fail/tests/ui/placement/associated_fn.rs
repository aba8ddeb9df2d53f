// placement: #[kernel] on an associated function without `self` cannot be told from a free
// function by the macro; rustc rejects the module it expands to, with a note on the attribute
use kernel_std::prelude::*;

struct Adder;

impl Adder {
    #[kernel(BLOCK = [64])]
    fn add<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
        let offs = arange(0, BLOCK);
        store(x + offs, load(x + offs, offs < n), offs < n);
    }
}

fn main() {}
