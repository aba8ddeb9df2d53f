// dtype: an unsupported element or scalar type says which ones are supported
use kernel_std::prelude::*;

#[kernel]
fn k(a: Ptr<u64>, n: u64, h: f16) {}

fn main() {}
