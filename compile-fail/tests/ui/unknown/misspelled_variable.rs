// unknown: a misspelled local gets a suggestion from the names in scope
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offsets = arange(0, 16);
    store(out + ofsets, load(x + offsets));
}

fn main() {}
