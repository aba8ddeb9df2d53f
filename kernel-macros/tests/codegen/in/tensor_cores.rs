//! Tensor-core `dot`s outside K loops (`DevGen::gen_dot_mma`): operands staged in swizzled
//! shared memory, the result in the accumulator (`mma`) layout.

use kernel_std::prelude::*;

/// `mma.sync.m16n8k16` (two warps: no warpgroup, so one body for every target): `ldmatrix.x4`
/// fragments of A, `ldmatrix.x4.trans` pairs of B; the activation and the f16 cast run in the
/// accumulator layout, the cast two columns at a time (`pack_f16x2`), and the masked store
/// writes column pairs.
#[kernel(BM = [32], BN = [32], BK = [32], num_warps = 2)]
pub fn mma_sync<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f16>, n: i32) {
    let rm = arange(0, BM);
    let rn = arange(0, BN);
    let rk = arange(0, BK);
    let x = load(a + rm.as_col() * BK + rk.as_row());
    let y = load(b + rk.as_col() * BN + rn.as_row());
    let acc = dot(x, y);
    let act = where_(acc >= 0.0, acc, 0.01 * acc);
    store(c + rm.as_col() * BN + rn.as_row(), act.to::<f16>(), rn.as_row() < n);
}

/// Four warps make a warpgroup: an sm_90a body with one `wgmma.mma_async.m64n32k16` per 16-wide
/// K step (operands through descriptors, `fence.proxy.async` before the barrier), and an
/// `mma.sync` body for the other targets.
#[kernel(BM = [64], BN = [32], BK = [32])]
pub fn wgmma<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>) {
    let rm = arange(0, BM);
    let rn = arange(0, BN);
    let rk = arange(0, BK);
    let x = load(a + rm.as_col() * BK + rk.as_row());
    let y = load(b + rk.as_col() * BN + rn.as_row());
    store(c + rm.as_col() * BN + rn.as_row(), dot(x, y));
}

/// A 64x192 tile: one `wgmma.mma_async.m64n192k16` per K step (B staged in three 64-column
/// blocks).
#[kernel(BN = [192])]
pub fn wgmma_n192<const BN: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>) {
    let rm = arange(0, 64);
    let rn = arange(0, BN);
    let rk = arange(0, 16);
    let x = load(a + rm.as_col() * 16 + rk.as_row());
    let y = load(b + rk.as_col() * BN + rn.as_row());
    store(c + rm.as_col() * BN + rn.as_row(), dot(x, y));
}
