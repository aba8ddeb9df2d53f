// dtype: weak literals take the narrow type and must fit it; so must suffixed ones
use kernel_std::prelude::*;

#[kernel]
fn k(a: Ptr<i8>, b: Ptr<u16>) {
    let i = arange(0, 16);
    let x = load(a + i) + 127;
    let y = load(a + i) * 200;
    let z = load(b + i) - 70000;
    let w = 256u8;
    let v = load(b + i) + u16::MAX;
}

fn main() {}
