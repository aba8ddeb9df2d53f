// dtype: f16 and bf16 do not mix implicitly
use kernel_std::prelude::*;

#[kernel]
fn k(a: Ptr<f16>, b: Ptr<bf16>) {
    let offs = arange(0, 16);
    let s = load(a + offs) + load(b + offs);
}

fn main() {}
