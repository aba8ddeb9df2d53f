// dtype: signed and unsigned integers do not mix implicitly
use kernel_std::prelude::*;

#[kernel]
fn k(n: i32, m: u32) {
    let s = n + m;
}

fn main() {}
