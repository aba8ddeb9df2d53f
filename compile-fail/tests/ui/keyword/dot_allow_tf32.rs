// keyword: `allow_tf32` has no equivalent; the message says how to get tensor cores
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let a = load(x + offs.as_col() * 16 + offs.as_row());
    let c = dot(a, a, allow_tf32 = false);
    store(out + offs.as_col() * 16 + offs.as_row(), c);
}

fn main() {}
