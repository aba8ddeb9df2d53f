//! Reductions in each distributed layout: blocks of power-of-two shapes reduced along every axis
//! (in registers, lane shuffles and one partial per warp on the GPU), blocks smaller than a
//! program's threads, and `dot` results reduced in their tensor-core layout.

use kernel_std::prelude::*;

/// An `[R, C]` block of `x` (row-major) reduced along each axis: `out` gets the row sums, the
/// column maxima, the total and the row minima; `xo` the column-wise xor of the same block of
/// `bits`. One config per warp count.
#[kernel(R = [1, 8], C = [16, 256], num_warps = [1, 4])]
pub fn reduce_layouts<const R: i32, const C: i32>(x: Ptr<f32>, bits: Ptr<i32>, out: Ptr<f32>, xo: Ptr<i32>) {
    let r = arange(0, R);
    let c = arange(0, C);
    let v = load(x + r.as_col() * C + c.as_row());
    store(out + r, v.sum(1));
    store(out + R + c, v.max(0));
    store(out + R + C, v.sum(1).sum(0));
    store(out + R + C + 1 + r, v.min(1));
    let b = load(bits + r.as_col() * C + c.as_row());
    store(xo + c, b.xor_sum(0));
}

/// A `[4, B, 8]` block (flat order) reduced along each of its three axes, f16 in: `out` gets the
/// sums along axis 1 (`[4, 8]`), the maxima along axis 0 (`[B, 8]`) and the minima along axis
/// 2 (`[4, B]`), in that order.
#[kernel(B = [2, 32])]
pub fn reduce_3d<const B: i32>(x: Ptr<f16>, out: Ptr<f32>) {
    let v = load(x + arange(0, 4 * B * 8)).reshape([4, B, 8]).to::<f32>();
    let f = arange(0, 4 * 8);
    store(out + f, v.sum(1).reshape([4 * 8]));
    let g = arange(0, B * 8);
    store(out + 32 + g, v.max(0).reshape([B * 8]));
    let h = arange(0, 4 * B);
    store(out + 32 + B * 8 + h, v.min(2).reshape([4 * B]));
}

/// Row and column reductions of an `[M, N]` f16 `dot` result (K = 32) in its tensor-core layout,
/// as flash attention reduces its scores: `rmax` = row maxima, `rsum` = row sums of
/// `exp(s - rmax)`, `csum` = column sums. The configs cover one and two warpgroups, warps side by
/// side along N, and a block too large for the accumulator budget (off the tensor cores). Not
/// among them: 128 rows on one warpgroup, where ptxas serializes this kernel's lone `wgmma`s.
#[kernel]
#[autotune(
    configs = [
        config(M = 64, N = 64, num_warps = 4),
        config(M = 64, N = 128, num_warps = 4),
        config(M = 64, N = 64, num_warps = 8),
        config(M = 128, N = 64, num_warps = 8),
        config(M = 128, N = 128, num_warps = 8),
        config(M = 128, N = 256, num_warps = 4),
    ],
    key = [],
)]
pub fn dot_reductions<const M: i32, const N: i32>(a: Ptr<f16>, b: Ptr<f16>, rmax: Ptr<f32>, rsum: Ptr<f32>, csum: Ptr<f32>) {
    let m = arange(0, M);
    let n = arange(0, N);
    let k = arange(0, 32);
    let s = dot(load(a + m.as_col() * 32 + k.as_row()), load(b + k.as_col() * N + n.as_row()));
    let mx = s.max(1);
    store(rmax + m, mx);
    store(rsum + m, exp(s - mx.as_col()).sum(1));
    store(csum + n, s.sum(0));
}
