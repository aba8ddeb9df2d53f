// control: a `while` condition is one scalar bool for the whole program; `while let` and
// labels are not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let mut v = load(x + offs);
    while v > 1.0 {
        v = v * 0.5;
    }
    while n {
        store(x + offs, v);
    }
    'outer: while n > 0 {
        store(x + offs, v);
    }
    while let Some(f) = n {
        store(x + offs, v);
    }
}

fn main() {}
