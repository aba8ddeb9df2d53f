// static_assert: the condition is a bool computed at compile time from literals and
// meta-parameters; the message is a string literal
use kernel_std::prelude::*;

#[kernel(BLOCK = [16, 32])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    static_assert(n > 0, "n is a runtime value");
    static_assert(BLOCK, "an integer");
    static_assert(BLOCK > 0, BLOCK);
    static_assert(BLOCK * 4611686018427387904 > 0);
    static_assert(64 / (BLOCK - 16) > 0);
    static_assert(BLOCK == true);
    static_assert(arange(0, BLOCK).sum(0) > 0);
    static_assert();
    let a = static_assert(true);
    store(x, 1.0);
}

fn main() {}
