//! Kernels exercised by the integration tests, built for the host (CPU backend) and for
//! nvptx64 (`cargo xtask build-ptx` compiles them like the examples).

use kernel_std::prelude::*;

/// bf16 `dot` with the accumulate form, a transposed operand and an i64 row stride.
#[kernel(BM = [16], BN = [32], BK = [16])]
pub fn bf16_dot_trans<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<bf16>, bt: Ptr<bf16>, c: Ptr<f32>, k: i32, lda: i64) {
    let rm = arange(0, BM);
    let rn = arange(0, BN);
    let rk = arange(0, BK);
    let mut acc = zeros::<f32>([BM, BN]);
    for k0 in (0..k).step_by(BK) {
        let ka = k0 + rk;
        let x = load(a + rm.as_col() * lda + ka.as_row(), ka.as_row() < k, 0.0);
        // bt is stored (N, K): load a [BN, BK] block and transpose it.
        let yt = load(bt + rn.as_col() * k + ka.as_row(), ka.as_row() < k, 0.0);
        acc += dot(x, yt.trans());
    }
    store(c + rm.as_col() * BN + rn.as_row(), acc);
}

/// Row sums and column maxima of a 2-D block, a 2-D grid, `num_programs`, early `return`.
#[kernel(R = [8], C = [16])]
pub fn reduce_both_axes<const R: i32, const C: i32>(x: Ptr<f32>, row_sum: Ptr<f32>, col_max: Ptr<f32>, limit: i32) {
    let tile = program_id(0) + num_programs(0) * program_id(1);
    if tile >= limit {
        return;
    }
    let r = arange(0, R);
    let c = arange(0, C);
    let base = x + tile * R * C;
    let v = load(base + r.as_col() * C + c.as_row());
    store(row_sum + tile * R + r, v.sum(1));
    store(col_max + tile * C + c, v.max(0));
}

/// Counts down with a negative step; `if` on a bool meta-parameter and on a runtime scalar.
#[kernel(B = [64], DOUBLE = [false, true])]
pub fn countdown<const B: i32, const DOUBLE: bool>(out: Ptr<i32>, n: i32, bonus: i32) {
    let i = arange(0, B);
    let mut acc = zeros::<i32>([B]);
    for k in range(n, 0, -3) {
        acc += i * k;
    }
    if DOUBLE {
        acc = acc * 2;
    }
    if bonus > 0 {
        acc = acc + bonus;
    } else {
        acc = acc - 1;
    }
    store(out + i, acc);
}

/// Casts with rounding and saturation, integer ops, shifts, `where_`, `minimum`, math.
#[kernel(B = [8])]
pub fn elementwise<const B: i32>(x: Ptr<f32>, h: Ptr<f16>, ints: Ptr<i32>, wide: Ptr<i64>, u: Ptr<u32>, f: Ptr<f32>) {
    let i = arange(0, B);
    let v = load(x + i);
    store(h + i, v.to::<f16>());
    store(ints + i, (v * 1e10).to::<i32>() / 7 % 5);
    store(wide + i, (i.to::<i64>() << 40) - i.to::<i64>());
    store(u + i, (i.to::<u32>() ^ 3) | 16);
    let safe = where_(v > 0.0, sqrt(v), minimum(v, -1.0));
    store(f + i, exp(safe) + abs(v) - v.floor());
}

/// `full`, `broadcast_to`, `reshape`, `expand_dims`, scalar `load`/`store`, `cdiv` and `max`.
#[kernel(B = [4])]
pub fn shapes<const B: i32>(scalar: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let s = load(scalar);
    let grid = full::<f32>([B, B], 0.5).broadcast_to([B, B]) + arange(0, B).expand_dims(0).to::<f32>();
    let flat = grid.reshape([B * B]);
    store(out + arange(0, B * B), flat * s);
    store(scalar, max(cdiv(n, B), 1).to::<f32>());
}

/// NaN/Inf propagation through `exp`, `where_` and a masked load's `other`.
#[kernel(B = [16])]
pub fn special_values<const B: i32>(x: Ptr<f32>, out_exp: Ptr<f32>, out_where: Ptr<f32>, out_other: Ptr<f32>, n: i32) {
    let i = arange(0, B);
    let m = i < n;
    let v = load(x + i, m, f32::NAN);
    store(out_exp + i, exp(v));
    store(out_where + i, where_(v > 0.0, v, -v));
    store(out_other + i, v);
}

/// Integer and f16 reductions along a long axis: sums, minima and maxima of a [4, 512] block.
#[kernel(R = [4], C = [512])]
pub fn long_reductions<const R: i32, const C: i32>(x: Ptr<i32>, h: Ptr<f16>, out: Ptr<i32>, hout: Ptr<f32>) {
    let r = arange(0, R);
    let c = arange(0, C);
    let v = load(x + r.as_col() * C + c.as_row());
    store(out + r, v.sum(1));
    store(out + R + r, v.max(1));
    store(out + 2 * R + r, v.min(1));
    store(out + 3 * R, v.min(1).max(0));
    let hv = load(h + r.as_col() * C + c.as_row());
    store(hout + r, hv.sum(1).to::<f32>());
}

/// Reads from `x` or `y` element by element (a pointer block computed from two parameters),
/// `n` elements from `offset`; the bounds check of such a block covers both buffers.
#[kernel(B = [64])]
pub fn pick<const B: i32>(x: Ptr<f32>, y: Ptr<f32>, out: Ptr<f32>, n: i32, offset: i32) {
    let i = arange(0, B);
    let m = i < n;
    let src = where_(i % 2 == 0, x + offset + i, y + offset + i);
    store(out + i, load(src, m, 0.0), m);
}

/// Copies `n` elements of `x` to `out`, then returns early when `stop` is set, else adds one to
/// them: an access outside `x` before a `return` is reported like any other.
#[kernel(B = [64])]
pub fn copy_then_return<const B: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32, stop: i32) {
    let i = arange(0, B);
    let v = load(x + i, i < n, 0.0);
    store(out + i, v, i < 16);
    if stop != 0 {
        return;
    }
    store(out + i, v + 1.0, i < 16);
}

/// Blocks that are multiples of 16 but not powers of two: a [48, 48] f16 `dot` (tensor cores
/// with N = 48), its row sums and column maxima, and a masked 48-element load.
#[kernel(B = [48])]
pub fn blocks_of_48<const B: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, row_sum: Ptr<f32>, col_max: Ptr<f32>, v: Ptr<f32>, n: i32) {
    let r = arange(0, B);
    let x = load(a + r.as_col() * B + r.as_row());
    let y = load(b + r.as_col() * B + r.as_row());
    let acc = dot(x, y);
    store(c + r.as_col() * B + r.as_row(), acc);
    store(row_sum + r, acc.sum(1));
    store(col_max + r, acc.max(0));
    let m = r < n;
    store(v + r, load(v + r, m, 0.0) * 2.0, m);
}

/// Every float math function on an f64 block, written to `out[f * n + i]` for function `f`
/// (exp, exp2, log, log2, sqrt, rsqrt, abs, sin, cos, floor, ceil): computed in f64 on both
/// backends.
#[kernel(B = [64])]
pub fn math_f64<const B: i32>(x: Ptr<f64>, out: Ptr<f64>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 1.0);
    store(out + i, exp(v), m);
    store(out + n + i, exp2(v), m);
    store(out + 2 * n + i, log(v), m);
    store(out + 3 * n + i, log2(v), m);
    store(out + 4 * n + i, sqrt(v), m);
    store(out + 5 * n + i, rsqrt(v), m);
    store(out + 6 * n + i, abs(v), m);
    store(out + 7 * n + i, sin(v), m);
    store(out + 8 * n + i, cos(v), m);
    store(out + 9 * n + i, floor(v), m);
    store(out + 10 * n + i, ceil(v), m);
}

/// Elementwise `minimum`/`maximum` with NaN operands and the block reductions `min`/`max`
/// over values with NaNs (a NaN operand is ignored, as by PTX `min.f32`/`max.f32`), and the
/// shifts `<<`/`>>` by amounts at or above the width and negative ones (everything shifted out).
#[kernel(B = [16])]
pub fn nan_minmax_shifts<const B: i32>(a: Ptr<f32>, b: Ptr<f32>, lo: Ptr<f32>, hi: Ptr<f32>, red: Ptr<f32>, v: Ptr<i32>, s: Ptr<i32>, shifted: Ptr<i32>) {
    let i = arange(0, B);
    let x = load(a + i);
    let y = load(b + i);
    store(lo + i, minimum(x, y));
    store(hi + i, maximum(x, y));
    store(red, x.min(0));
    store(red + 1, x.max(0));
    let w = load(v + i);
    let k = load(s + i);
    store(shifted + i, w << k);
    store(shifted + B + i, w >> k);
}

/// A `while` loop whose condition is a reduction of a block the body changes: halves `x` until
/// its largest element is at most `limit`; writes the block and the number of halvings.
#[kernel(B = [32])]
pub fn halvings<const B: i32>(x: Ptr<f32>, out: Ptr<f32>, steps: Ptr<i32>, limit: f32) {
    let i = arange(0, B);
    let mut v = load(x + i);
    let mut k = 0;
    while v.max(0) > limit {
        v = v * 0.5;
        k += 1;
    }
    store(out + i, v);
    store(steps, k);
}

/// One config per `num_warps` × `num_stages` value: a row sum and a scan that must give the
/// same result with 2, 4 or 8 warps.
#[kernel(B = [256], num_warps = [2, 4, 8], num_stages = [1, 3])]
pub fn warps_list<const B: i32>(x: Ptr<f32>, out: Ptr<f32>) {
    let i = arange(0, B);
    let v = load(x + i);
    store(out + i, v.cumsum(0));
    store(out + B, v.sum(0));
}

/// `y = 2x + 1` on rows of `n` f16 values (row stride `stride`), one program per row, in blocks
/// of `B` through pointer blocks stepped by `B` (`xs += B`): each iteration's copy holds two
/// 16-byte chunks per thread, so the GPU tests every chunk ahead and copies with vector
/// accesses when all pass (rows whose start is only 2-byte aligned take the checked copy).
#[kernel(B = [2048], num_warps = 4)]
pub fn stepped_rows<const B: i32>(x: Ptr<f16>, y: Ptr<f16>, n: i32, stride: i32) {
    let row = program_id(0);
    let mut xs = x + row * stride + arange(0, B);
    let mut ys = y + row * stride + arange(0, B);
    for off in range(0, n, B) {
        let m = off + arange(0, B) < n;
        let v = load(xs, m, 0.0).to::<f32>();
        store(ys, (v * 2.0 + 1.0).to::<f16>(), m);
        xs += B;
        ys += B;
    }
}

/// Attention's two stages as Triton's tutorial writes them: one `q` tile, the key blocks before
/// `lo` in one loop and the rest in a second one (here both unmasked: `n` and `lo` multiples of
/// `BN`). `o` gets `softmax(q k^T) v` for the `BM` query rows of the program (row-major, head
/// dimension 64).
#[kernel(BM = [64], BN = [32], num_warps = 4, num_stages = 2)]
pub fn two_stage_attention<const BM: i32, const BN: i32>(q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, v_ptr: Ptr<f16>, o_ptr: Ptr<f32>, n: i32, lo: i32) {
    let offs_m = program_id(0) * BM + arange(0, BM);
    let offs_n = arange(0, BN);
    let offs_d = arange(0, 64);
    let q = load(q_ptr + offs_m.as_col() * 64 + offs_d.as_row());
    let mut m_i = full::<f32>([BM], f32::NEG_INFINITY);
    let mut l_i = full::<f32>([BM], 0.0);
    let mut acc = zeros::<f32>([BM, 64]);
    for start_n in range(0, lo, BN) {
        let cols = start_n + offs_n;
        let qk = dot(q, load(k_ptr + cols.as_row() * 64 + offs_d.as_col()));
        let m_ij = maximum(m_i, qk.max(1));
        let p = exp(qk - m_ij.as_col());
        let alpha = exp(m_i - m_ij);
        l_i = l_i * alpha + p.sum(1);
        acc = dot(p.to::<f16>(), load(v_ptr + cols.as_col() * 64 + offs_d.as_row()), acc * alpha.as_col());
        m_i = m_ij;
    }
    for start_n in range(lo, n, BN) {
        let cols = start_n + offs_n;
        let qk = dot(q, load(k_ptr + cols.as_row() * 64 + offs_d.as_col()));
        let m_ij = maximum(m_i, qk.max(1));
        let p = exp(qk - m_ij.as_col());
        let alpha = exp(m_i - m_ij);
        l_i = l_i * alpha + p.sum(1);
        acc = dot(p.to::<f16>(), load(v_ptr + cols.as_col() * 64 + offs_d.as_row()), acc * alpha.as_col());
        m_i = m_ij;
    }
    store(o_ptr + offs_m.as_col() * 64 + offs_d.as_row(), acc / l_i.as_col());
}

/// `C = A @ B` with the K loop written as many Triton kernels write it (`accumulator +=
/// tl.dot(a, b)`, the pointers recomputed from the loop variable): on the GPU it takes the same
/// pipelined loop as `dot(a, b, acc)` with stepped pointers. One config of 64x64 tiles on 4 warps
/// (a `wgmma` tile on sm_90a).
#[kernel(BM = [64], BN = [64], BK = [32], num_warps = 4, num_stages = 3)]
pub fn matmul_plus_equals<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, m: i32, n: i32, k: i32) {
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let mut accumulator = zeros::<f32>([BM, BN]);
    for kk in 0..cdiv(k, BK) {
        let rk = kk * BK + arange(0, BK);
        let x = load(a + rm.as_col() * k + rk.as_row(), (rm.as_col() < m) & (rk.as_row() < k), 0.0);
        let y = load(b + rk.as_col() * n + rn.as_row(), (rk.as_col() < k) & (rn.as_row() < n), 0.0);
        accumulator += dot(x, y);
    }
    store(c + rm.as_col() * n + rn.as_row(), accumulator, (rm.as_col() < m) & (rn.as_row() < n));
}

/// `C = A @ B` with the K tail read as ones (`other` 1.0 on both operands): the last K tile adds
/// one per padded element. On sm_90a the copy engine fills the elements past the operands with
/// zeros, so the fix-up that writes `other` must still run (it is left out only where `other`
/// is zero). Rows and columns are not masked: `m` and `n` are multiples of the tile.
#[kernel(BM = [64], BN = [64], BK = [32], num_warps = 4, num_stages = 3)]
pub fn matmul_ones_past_k<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, n: i32, k: i32) {
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let mut acc = zeros::<f32>([BM, BN]);
    for kk in 0..cdiv(k, BK) {
        let rk = kk * BK + arange(0, BK);
        let x = load(a + rm.as_col() * k + rk.as_row(), rk.as_row() < k, 1.0);
        let y = load(b + rk.as_col() * n + rn.as_row(), rk.as_col() < k, 1.0);
        acc = dot(x, y, acc);
    }
    store(c + rm.as_col() * n + rn.as_row(), acc);
}

/// Sums over key blocks of `where_(keep, q k^T, 0)`, the condition a bound on the keys
/// (`cols < lim`) and a run-time switch or a diagonal (`(flag > 0) | (rows >= cols)`): on the GPU
/// the loop tests the condition once per iteration and runs its body without it where it holds
/// on the whole block (`plan/uniform.rs`), so with the bounds the test chooses, blocks that the
/// condition covers whole, cuts and leaves out all occur. The keys' rows are `sk` apart.
#[kernel(BM = [64], BN = [32], D = [32], num_warps = 4)]
pub fn masked_scores<const BM: i32, const BN: i32, const D: i32>(q: Ptr<f16>, k: Ptr<f16>, out: Ptr<f32>, n: i32, sk: i32, lim: i32, flag: i32) {
    let offs_m = program_id(0) * BM + arange(0, BM);
    let offs_n = arange(0, BN);
    let offs_d = arange(0, D);
    let qt = load(q + offs_m.as_col() * D + offs_d.as_row());
    let mut acc = zeros::<f32>([BM, BN]);
    for start_n in range(0, n, BN) {
        let cols = start_n + offs_n;
        let kt = load(k + (cols.as_row() * sk + offs_d.as_col()), cols.as_row() < n, 0.0);
        let s = dot(qt, kt);
        let keep = (cols.as_row() < lim) & ((flag > 0) | (offs_m.as_col() >= cols.as_row()));
        acc = acc + where_(keep, s, 0.0);
    }
    store(out + offs_m.as_col() * BN + offs_n.as_row(), acc);
}

/// `C = A @ W^T` for a weight `W` stored `[N, K]`, written as `dot(a, w.trans(), acc)` with the
/// pointers recomputed from the loop variable: on the GPU, the transpose goes into the load's
/// pointers and the loop is pipelined (tensor maps on sm_90a, `wgmma` 64x64 tiles).
#[kernel(BM = [64], BN = [64], BK = [32], num_warps = 4, num_stages = 3)]
pub fn matmul_weight_t<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f16>, w: Ptr<f16>, c: Ptr<f32>, m: i32, n: i32, k: i32) {
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let mut acc = zeros::<f32>([BM, BN]);
    for kk in 0..cdiv(k, BK) {
        let rk = kk * BK + arange(0, BK);
        let x = load(a + rm.as_col() * k + rk.as_row(), (rm.as_col() < m) & (rk.as_row() < k), 0.0);
        let wt = load(w + rn.as_col() * k + rk.as_row(), (rn.as_col() < n) & (rk.as_row() < k), 0.0);
        acc = dot(x, wt.trans(), acc);
    }
    store(c + rm.as_col() * n + rn.as_row(), acc, (rm.as_col() < m) & (rn.as_row() < n));
}

/// `C = A @ B` with the pointers advanced at the top of each iteration (starting one K tile
/// back) and, for A, in two steps: the GPU runs this loop as written (the pipelined copies would
/// read the pointers of the iteration before its steps).
#[kernel(BM = [64], BN = [64], BK = [32], num_warps = 4, num_stages = 3)]
pub fn matmul_steps_first<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, m: i32, n: i32, k: i32) {
    let rm = program_id(0) * BM + arange(0, BM);
    let rn = program_id(1) * BN + arange(0, BN);
    let rk = arange(0, BK);
    let mut a_ptrs = a + rm.as_col() * k + (rk - BK).as_row();
    let mut b_ptrs = b + (rk - BK).as_col() * n + rn.as_row();
    let mut acc = zeros::<f32>([BM, BN]);
    for kk in 0..cdiv(k, BK) {
        a_ptrs += 16;
        a_ptrs += BK - 16;
        b_ptrs += BK * n;
        let x = load(a_ptrs, (rm.as_col() < m) & (rk.as_row() < k - kk * BK), 0.0);
        let y = load(b_ptrs, (rk.as_col() < k - kk * BK) & (rn.as_row() < n), 0.0);
        acc = dot(x, y, acc);
    }
    store(c + rm.as_col() * n + rn.as_row(), acc, (rm.as_col() < m) & (rn.as_row() < n));
}
