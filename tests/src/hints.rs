//! `multiple_of` hints on scalars: promises that both backends check where they are made and
//! that the GPU code relies on (tests: `tests/tests/suite/hints.rs`).

use kernel_std::prelude::*;

/// `y = 2x + sum(x)` on rows of `n` f16 values `stride` apart, one program per row, with the
/// promises that the row pointers are 16-byte aligned and the stride and the length multiples
/// of 8: the GPU code then has no alignment tests and no 4-byte-piece copy (one 16-byte access
/// per chunk wherever the row's chunks are inside their buffers).
#[kernel(B = [1024], num_warps = 4)]
pub fn hinted_rows<const B: i32>(x: Ptr<f16>, y: Ptr<f16>, n: i32, stride: i32) {
    let x = multiple_of(x, 16);
    let y = multiple_of(y, 16);
    let stride = multiple_of(stride, 8);
    let n = multiple_of(n, 8);
    let row = program_id(0);
    let cols = arange(0, B);
    let mask = cols < n;
    let v = load(x + row * stride + cols, mask, 0.0).to::<f32>();
    let s = v.sum(0);
    store(y + row * stride + cols, (v * 2.0 + s).to::<f16>(), mask);
}

/// The sum of `x[0..n]` by program 0, in blocks of `B`, with Triton's hint on the block start
/// (`tl.multiple_of(start, BLOCK)`), which the GPU code generator proves (the loop starts at 0
/// and steps by `B`): it checks nothing there. The CPU backend checks it anyway.
#[kernel(B = [128, 256])]
pub fn hinted_blocks<const B: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let mut acc = zeros::<f32>([B]);
    for start in range(0, n, B) {
        let start = multiple_of(start, B);
        let cols = start + arange(0, B);
        acc += load(x + cols, cols < n, 0.0);
    }
    store(out, acc.sum(0));
}
