// static_assert: evaluated on the meta-parameters of every instance that reaches it; a false
// one is an error at the call naming the instances (none for a kernel without meta-parameters)
use kernel_std::prelude::*;

#[kernel(BLOCK = [4, 16, 8, 64])]
fn k<const BLOCK: i32>(x: Ptr<f32>) {
    static_assert(BLOCK >= 16, "blocks of at least 16 elements");
    static_assert(BLOCK % 4 == 0 && (BLOCK < 128 || !true));
    store(x + arange(0, BLOCK), 1.0);
}

#[kernel]
fn plain(x: Ptr<f32>) {
    static_assert(1 + 1 == 3);
    store(x, 1.0);
}

// Only the instances that take the branch: `EVEN = false, B = 32` reaches the first assertion
// of neither kind.
#[kernel(EVEN = [true, false], B = [16, 32])]
fn guarded<const EVEN: bool, const B: i32>(x: Ptr<f32>) {
    if EVEN {
        static_assert(B == 16, "even blocks are 16 wide");
    } else {
        static_assert(min(B, 20) == 16, "odd blocks too");
    }
    store(x, 1.0);
}

fn main() {}
