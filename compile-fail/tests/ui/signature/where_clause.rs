// signature: where clauses are not supported
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32)
where
    i32: Copy,
{
    let offs = arange(0, 16);
}

fn main() {}
