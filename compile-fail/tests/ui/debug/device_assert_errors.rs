// device_assert: the condition is a mask (a bool scalar or block), the message a string
// literal; it is a statement
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    device_assert(v, "not a mask");
    device_assert(offs < n, n);
    device_assert(x + offs, "pointers");
    device_assert(offs < n, "too", "many");
    device_assert(cond = offs < n);
    let ok = device_assert(v > 0.0);
    store(x + offs, v);
}

fn main() {}
