// atomic: operand dtypes and shapes, the supported element types, `sem`/`scope` values and
// keyword arguments are checked at the call
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, c: Ptr<i32>, n: i32) {
    let offs = arange(0, 16);
    atomic_add(x + offs, offs, offs < n);
    atomic_or(x + offs, 1.0);
    atomic_add(c + offs, 1, offs < n, "seq_cst");
    atomic_add(c + offs, 1, offs < n, "relaxed", "device");
    atomic_max(c + offs, arange(0, 32));
    atomic_cas(c, 0);
    atomic_add(c + offs, 1, mask = offs < n);
    atomic_xchg(offs, 1);
}

fn main() {}
