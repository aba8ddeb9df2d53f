// arange: an autotune config gives BLOCK = 24
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 32), config(BLOCK = 24)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
}

fn main() {}
