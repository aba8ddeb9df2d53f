// instances: a helper named `none` would give `ACT = none` the entry name of `ACT = None`
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn none(x: Block) -> Block {
        x
    }

    #[kernel(ACT = [None, Some(none)])]
    fn k<const ACT: Option<Func>>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        let mut v = load(x + offs);
        if let Some(f) = ACT {
            v = f(v);
        }
        store(x + offs, v);
    }
}

fn main() {}
