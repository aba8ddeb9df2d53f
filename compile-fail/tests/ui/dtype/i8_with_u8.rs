// dtype: i8 and u8 (signed and unsigned of one width) do not mix implicitly; i8 with i32 widens
use kernel_std::prelude::*;

#[kernel]
fn k(a: Ptr<i8>, b: Ptr<u8>, c: Ptr<i32>) {
    let i = arange(0, 16);
    let x = load(a + i);
    let y = load(b + i);
    store(c + i, x + i);
    let s = x + y;
}

fn main() {}
