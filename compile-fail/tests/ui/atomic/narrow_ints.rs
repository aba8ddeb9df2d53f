// atomic: the 8- and 16-bit integer types have no atomics
use kernel_std::prelude::*;

#[kernel]
fn k(a: Ptr<i8>, b: Ptr<u16>, c: Ptr<i32>) {
    let i = arange(0, 16);
    atomic_add(a + i, 1);
    atomic_or(b + i, 1);
    atomic_add(c + i, 1);
}

fn main() {}
