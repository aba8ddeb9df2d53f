// autotune: num_stages is from 1 to 8
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16, num_stages = 0)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
