// reduce: the combine function of associative_scan/reduce is a #[helper] of two scalars that is
// one expression of them
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn one(a: f32) -> f32 {
        a
    }

    #[helper]
    fn with_let(a: f32, b: f32) -> f32 {
        let s = a + b;
        s * 0.5
    }

    #[helper]
    fn idiv(a: i32, b: i32) -> i32 {
        a / b
    }

    #[kernel]
    fn k(x: Ptr<f32>, v: Ptr<i32>) {
        let offs = arange(0, 16);
        let a = load(x + offs);
        let s = associative_scan(a, 0, one);
        let t = reduce(a, 0, with_let);
        let u = reduce(load(v + offs), 0, idiv);
        let w = associative_scan(a, 0, exp);
        let z = reduce(a, 0);
    }
}

fn main() {}
