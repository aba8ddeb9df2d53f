//! K loops (`expand_device/pipeline.rs`): the seeds' loop `acc = dot(load(a_ptrs), load(b_ptrs),
//! acc)` with pointer steps is software-pipelined over `num_stages` shared-memory buffers of
//! `cp.async` copies. One warp (no warpgroup): one body, `mma.sync`, for every target; the
//! Hopper versions are in `hopper.rs`. The tiles are as small as the paths allow: the
//! generated code grows with the elements per thread.

use kernel_std::prelude::*;

/// The seeds' K loop (the differential test's and the old unit tests' `mm`), with the wrapped
/// `% M`/`% N` offsets of Triton's tutorial. Config 0: three stages (`cp_async_wait_group::<1>`:
/// two groups in flight); config 1: one stage (copy, wait, compute). Before the loop a
/// block-wide vote on every thread's bounds proof (`__proved`) picks the unchecked copy of the
/// loop. The epilogue's columns wrap, so its stores keep per-pair tests (no fast path), storing
/// column pairs (`store_vec::<F16, 2>`).
#[kernel]
#[autotune(
    configs = [
        config(BM = 16, BN = 16, BK = 16, num_warps = 1, num_stages = 3),
        config(BM = 16, BN = 16, BK = 16, num_warps = 1, num_stages = 1),
    ],
    key = [M],
)]
pub fn seed_k_loop<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {
    let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
    let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
    let offs_k = arange(0, BK);
    let mut a_ptrs = a_ptr + (offs_m.as_col() * K + offs_k.as_row());
    let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());
    let mut acc = zeros::<f32>([BM, BN]);
    for k in 0..cdiv(K, BK) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BK;
        b_ptrs += BK * N;
    }
    let c_ptrs = c_ptr + offs_m.as_col() * N + offs_n.as_row();
    let c = acc.to::<f16>();
    store(c_ptrs, c);
}

/// A store in the loop keeps program order: the loop is lowered as written (not pipelined), its
/// `dot` still on tensor cores, staged in one buffer per iteration (`cp_async_wait_all`).
#[kernel(BM = [16], BN = [16], BK = [16], num_warps = 1)]
pub fn loop_with_store<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {
    let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
    let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
    let offs_k = arange(0, BK);
    let mut a_ptrs = a_ptr + (offs_m.as_col() * K + offs_k.as_row());
    let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());
    let mut acc = zeros::<f32>([BM, BN]);
    for k in 0..cdiv(K, BK) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BK;
        b_ptrs += BK * N;
        store(c_ptr, 1.0);
    }
    store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), acc.to::<f16>());
}

/// The seeds' masked epilogue, whose rows are proven contiguous per thread (`mma_store_fast`:
/// the pointer block is affine along a row with a unit step, `chunks.rs`'s `col_step`): each
/// thread tests its rows once, and f16 results go 16 bytes at a time after the four lanes of a
/// quad exchange pairs (`quad_transpose`, decided warp-wide with `warp_all`); the f32 result
/// keeps one 8-byte store per column pair, untested. A load between the loop and the stores
/// needs a barrier before the first store (no barrier follows the loop's), and the barrier
/// between the stores keeps their order; none follows the last statement. (32 columns: four
/// 8-column tiles per warp, the group the quad exchange needs.)
#[kernel(BM = [16], BN = [32], BK = [16], num_warps = 1)]
pub fn fast_epilogue<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>, d_ptr: Ptr<f32>, M: i32, N: i32, K: i32) {
    let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
    let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
    let offs_k = arange(0, BK);
    let mut a_ptrs = a_ptr + (offs_m.as_col() * K + offs_k.as_row());
    let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());
    let mut acc = zeros::<f32>([BM, BN]);
    for k in 0..cdiv(K, BK) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BK;
        b_ptrs += BK * N;
    }
    let cm = program_id(0) * BM + arange(0, BM);
    let cn = program_id(1) * BN + arange(0, BN);
    let mask = (cm.as_col() < M) & (cn.as_row() < N);
    acc = acc + load(d_ptr + cm.as_col() * N + cn.as_row(), mask, 0.0);
    let c = acc.to::<f16>();
    store(c_ptr + cm.as_col() * N + cn.as_row(), c, mask);
    store(d_ptr + cm.as_col() * N + cn.as_row(), acc, mask);
}

/// 8-bit float operands in the pipelined loop (copied raw in 8-byte chunks, widened to f16 in
/// shared memory), through pointers advanced twice (the row offsets added first). `a`'s are
/// `parameter + offsets` in two blocks (`ptr_sum`): each chunk keeps one `i32` offset, their
/// sum taken in `i64` and kept when it fits. `b`'s column offsets are `u32`, so its pointer
/// block is no such sum: each chunk keeps a 64-bit base pointer, and one that is not
/// contiguous (the wrapped columns) gets the top bit of its address set, outside every buffer,
/// since a byte offset may be odd and would undo an odd marker (`pipeline/operand.rs`).
#[kernel(BM = [16], BN = [16], BK = [32], num_warps = 1, num_stages = 2)]
pub fn fp8_row_pointers<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f8e4m3>, b_ptr: Ptr<f8e4m3>, c_ptr: Ptr<f32>, M: i32, N: i32, K: i32) {
    let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
    let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
    let offs_k = arange(0, BK);
    let mut a_ptrs = (a_ptr + offs_m.as_col() * K) + offs_k.as_row();
    let mut b_ptrs = (b_ptr + offs_k.as_col() * N) + offs_n.as_row().to::<u32>();
    let mut acc = zeros::<f32>([BM, BN]);
    for k in 0..cdiv(K, BK) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BK;
        b_ptrs += BK * N;
    }
    store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), acc);
}
