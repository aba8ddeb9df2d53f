//! Kernels for the 8-bit floats (`f8e4m3`, `f8e5m2`: storage, conversions both ways,
//! arithmetic in f32 rounded once, reductions) and the 8-bit `dot`s (`f8e4m3`/`f8e5m2`
//! operands with f32 sums, `i8`/`u8` operands with i32 sums).

use kernel_std::prelude::*;

/// For the `n` valid values `x = x[i]` (f32) and `e = e[i]`, `g = g[i]` (stored 8-bit floats):
/// `q4` gets `x` as f8e4m3 and `x` through f64 as f8e4m3; `q5` the same in f8e5m2; `f` gets `e`,
/// `g` and `e.to::<f16>()` as f32, `e + g'` (`g'` = `g` as f8e4m3), `e * e`, `-e`, `abs(e)` and
/// `maximum(e, 0.5)` each computed in f8e4m3 and stored as f32, `e` as i32 as f32; `red` gets
/// the sum, max and min of the valid `e` (as f8e4m3, then f32).
#[kernel(N = [128])]
pub fn fp8_ops<const N: i32>(x: Ptr<f32>, e: Ptr<f8e4m3>, g: Ptr<f8e5m2>, n: i32, q4: Ptr<f8e4m3>, q5: Ptr<f8e5m2>, f: Ptr<f32>, red: Ptr<f32>) {
    let i = arange(0, N);
    let mask = i < n;
    let xv = load(x + i, mask, 0.0);
    store(q4 + i, xv.to::<f8e4m3>(), mask);
    store(q4 + N + i, xv.to::<f64>().to::<f8e4m3>(), mask);
    store(q5 + i, xv.to::<f8e5m2>(), mask);
    store(q5 + N + i, xv.to::<f64>().to::<f8e5m2>(), mask);
    let ev = load(e + i, mask, 0.0);
    let gv = load(g + i, mask, 0.0);
    store(f + i, ev.to::<f32>(), mask);
    store(f + N + i, gv.to::<f32>(), mask);
    store(f + 2 * N + i, ev.to::<f16>().to::<f32>(), mask);
    store(f + 3 * N + i, (ev + gv.to::<f8e4m3>()).to::<f32>(), mask);
    store(f + 4 * N + i, (ev * ev).to::<f32>(), mask);
    store(f + 5 * N + i, (-ev).to::<f32>(), mask);
    store(f + 6 * N + i, abs(ev).to::<f32>(), mask);
    store(f + 7 * N + i, maximum(ev, 0.5).to::<f32>(), mask);
    store(f + 8 * N + i, ev.to::<i32>().to::<f32>(), mask);
    let lo = load(e + i, mask, f8e4m3::MIN);
    let hi = load(e + i, mask, f8e4m3::MAX);
    store(red, ev.sum(0).to::<f32>());
    store(red + 1, lo.max(0).to::<f32>());
    store(red + 2, hi.min(0).to::<f32>());
}

/// `c = a @ b` for `a: [M, K]` f8e4m3 and `b: [K, N]` f8e5m2 (row-major, `k` columns of `a`
/// valid), f32 sums over `BK`-column steps, plus `bias[N]`. On tensor cores, the operands
/// staged as f16: `mma.sync` for 32-row tiles, `wgmma` on sm_90a for 64-row tiles.
#[kernel(BM = [32, 64], BN = [32], BK = [32], num_warps = 4)]
pub fn fp8_dot<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f8e4m3>, b: Ptr<f8e5m2>, bias: Ptr<f32>, c: Ptr<f32>, m: i32, n: i32, k: i32) {
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let rk = arange(0, BK);
    let mut acc = load(bias + rn, rn < n, 0.0).as_row() + zeros::<f32>([BM, BN]);
    for k0 in range(0, k, BK) {
        let ka = k0 + rk;
        let x = load(a + rm.as_col() * k + ka.as_row(), (rm.as_col() < m) & (ka.as_row() < k), 0.0);
        let y = load(b + ka.as_col() * n + rn.as_row(), (ka.as_col() < k) & (rn.as_row() < n), 0.0);
        acc = dot(x, y, acc);
    }
    store(c + rm.as_col() * n + rn.as_row(), acc, (rm.as_col() < m) & (rn.as_row() < n));
}

/// `c = a @ b + c0` for `a: [M, K]` i8 and `b: [K, N]` u8 (row-major), i32 sums (wrapping).
/// On tensor cores (the operands staged as f16, each step's sums exact in f32): `mma.sync`
/// for 32-row tiles, `wgmma` on sm_90a for 64-row tiles.
#[kernel(BM = [32, 64], BN = [32], BK = [32], num_warps = 4)]
pub fn i8_dot<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<i8>, b: Ptr<u8>, c0: Ptr<i32>, c: Ptr<i32>, m: i32, n: i32, k: i32) {
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let rk = arange(0, BK);
    let cmask = (rm.as_col() < m) & (rn.as_row() < n);
    let mut acc = load(c0 + rm.as_col() * n + rn.as_row(), cmask, 0);
    for k0 in range(0, k, BK) {
        let ka = k0 + rk;
        let x = load(a + rm.as_col() * k + ka.as_row(), (rm.as_col() < m) & (ka.as_row() < k), 0);
        let y = load(b + ka.as_col() * n + rn.as_row(), (ka.as_col() < k) & (rn.as_row() < n), 0);
        acc = dot(x, y, acc);
    }
    store(c + rm.as_col() * n + rn.as_row(), acc, cmask);
}

/// Asserts that every f8e4m3 value is below `limit` (converted to f8e4m3): the report of a
/// failing element gives both 8-bit values.
#[kernel(B = [64])]
pub fn checked_fp8<const B: i32>(x: Ptr<f8e4m3>, limit: f32, out: Ptr<f32>) {
    let i = arange(0, B);
    let v = load(x + i);
    let lim = limit.to::<f8e4m3>();
    device_assert(v < lim, "values stay below the limit");
    store(out + i, v.to::<f32>());
}
