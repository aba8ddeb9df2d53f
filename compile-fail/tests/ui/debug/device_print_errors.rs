// device_print: a string literal prefix, then values (not pointers) that broadcast together;
// it is a statement
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    device_print(v);
    device_print("pointers", x + offs);
    device_print("shapes", v, arange(0, 32));
    device_print("v", v, hex = true);
    let p = device_print("v", v);
    store(x + offs, v);
}

fn main() {}
