// Fuzz regression (was a macro panic): a [2^40, 2^40] block passed the per-dimension checks, then the device code generator multiplied its dimensions out (`attempt to multiply with overflow`). A block now holds at most 2^40 elements.
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let s = n.broadcast_to([1099511627776, 1099511627776]).sum(0);
}

fn main() {}
