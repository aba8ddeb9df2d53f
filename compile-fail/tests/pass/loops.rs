// pass: `for` loops in all three spellings: `a..b`, `(a..b).step_by(s)` and `range(a, b, s)`,
// including the count-down `range(K, 0, -BLOCK)`.
use kernel_runtime::{Device, Tensor};
use kernel_std::prelude::*;

/// Sums x[0..K] (K a multiple of BLOCK) four ways into out[0..4].
#[kernel(BLOCK = [8])]
fn sums<const BLOCK: i32>(x: Ptr<i32>, out: Ptr<i32>, K: i32) {
    let offs = arange(0, BLOCK);

    let mut a = zeros::<i32>([BLOCK]);
    for i in 0..K / BLOCK {
        a += load(x + i * BLOCK + offs);
    }
    store(out, a.sum(0));

    let mut b = zeros::<i32>([BLOCK]);
    for k in (0..K).step_by(BLOCK) {
        b = b + load(x + k + offs);
    }
    store(out + 1, b.sum(0));

    // Counting down: k = K, K - BLOCK, ..., BLOCK.
    let mut c = zeros::<i32>([BLOCK]);
    for k in range(K, 0, -BLOCK) {
        c += load(x + (k - BLOCK) + offs);
    }
    store(out + 2, c.sum(0));

    // Scalar loop-carried values and range with the default step.
    let mut total = 0;
    for i in range(0, K) {
        total += load(x + i);
    }
    store(out + 3, total);
}

fn main() {
    let dev = Device::cpu();
    let k = 40usize;
    let xs: Vec<i32> = (0..k as i32).map(|i| i * i - 7).collect();
    let want: i32 = xs.iter().sum();
    let x = Tensor::from_vec(&dev, &[k], xs).unwrap();
    let out = Tensor::<i32>::zeros(&dev, &[4]).unwrap();
    sums::launch((1,), &x, &out, k as i32, 8).unwrap();
    assert_eq!(out.to_vec(), vec![want; 4]);
}
