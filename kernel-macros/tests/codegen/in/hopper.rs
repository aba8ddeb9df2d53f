//! Hopper (sm_90a) K loops (`expand_device/pipeline.rs`): with four warps or more an instance's
//! entry has a `wgmma` body for sm_90a and an `mma.sync` body for the other targets. The tiles
//! are as small as the paths allow (64 rows per warpgroup, 16 or 32 columns, K tiles of 16): the
//! generated code grows with the elements per thread. Only the sm_90a bodies are snapshotted
//! (`POLICIES` in `../snapshots.rs`): the others are the `mma.sync` paths of `k_loops.rs`.

use kernel_std::prelude::*;

/// The seeds' K loop on one warpgroup (64x32 tile, K tiles of 16, 3 stages), with the seeds'
/// masked epilogue. The sm_90a body: a `wgmma.mma_async.m64n32k16` group per K step left in
/// flight across iterations (`wgmma_wait::<1>`, four buffers), descriptors of buffer 0 built
/// once, buffer indices and barrier parity as counters. Both operands are
/// `param + rows * stride + cols` with scalar-parameter strides, so the loop has a tensor-map
/// version (`tma_load_2d` of one box per operand into `mbarrier`-completed buffers; the maps'
/// descriptors prefetched first; thread 0 issues the first stages' copies before the block
/// votes, `bar_and`, on the rows each thread checked; masked elements fixed up after the copy,
/// skipped when the masks, linear in `k`, hold at the first and last iterations) and the two
/// `cp.async` versions (checked and unchecked) as the fallback, which runs the epilogue out of
/// line (`outline`) and returns. The epilogue stores whole rows: each warp writes its 16 rows
/// with `stmatrix.x4` to padded shared memory and stores them back 16 bytes per lane (this
/// takes four 8-column tiles per warp: 32 columns). The
/// instance also gets a split entry (`__split`, sm_90a only): the block's program and part,
/// the part's iterations (`split_range`), the partial accumulators handed over through the
/// workspace (`st_cg_v4`, `split_arrive`, `ld_cg_v4`) to the last part, which runs the epilogue.
#[kernel(BM = [64], BN = [32], BK = [16])]
pub fn hopper_k_loop<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {
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
    let c = acc.to::<f16>();
    store(c_ptr + cm.as_col() * N + cn.as_row(), c, (cm.as_col() < M) & (cn.as_row() < N));
}

/// A tensor-map loop without a block barrier per iteration: two warpgroups (a 128x16 tile on 8
/// warps). After `wgmma_wait::<1>` each warp arrives on a per-buffer "readers done" `mbarrier`,
/// where thread 0 waits before refilling the buffer, so copies run `num_stages` iterations
/// ahead; a block barrier remains only after a fix-up of masked elements. (K tiles of 128 take
/// this path too, with A staged in 64-column blocks: the unit test
/// `k_tiles_deeper_than_64_use_wgmma_and_tensor_maps_in_64_column_blocks` checks that path, whose
/// code is too large to snapshot.)
#[kernel(BM = [128], BN = [16], BK = [16], num_warps = 8)]
pub fn hopper_reader_barriers<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f32>, M: i32, N: i32, K: i32) {
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
    store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), acc);
}

/// Tensor maps from explicit strides: A's column stride is a parameter too (`sak`, listed in
/// the map for the launch to check that it is 1); a mask that is not linear in `k` (A's) is
/// tested in every iteration before the fix-up. One stage: the sm_90a body has two buffers, so
/// no `wgmma` group stays in flight across iterations (`wgmma_wait::<0>` only) and each
/// iteration's copies run one ahead.
#[kernel(BM = [64], BN = [16], BK = [16], num_stages = 1)]
pub fn tma_strides<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f32>, M: i32, N: i32, K: i32, sam: i32, sak: i32) {
    let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
    let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
    let offs_k = arange(0, BK);
    let mut a_ptrs = a_ptr + (offs_m.as_col() * sam + offs_k.as_row() * sak);
    let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());
    let mut acc = zeros::<f32>([BM, BN]);
    for k in 0..cdiv(K, BK) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * k * BK, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BK * sak;
        b_ptrs += BK * N;
    }
    store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), acc);
}

/// Operands written as Triton's tutorials write them, the pointer advanced by one term after
/// another: `a_ptr + batch + rows * K + cols` is `((a_ptr + batch) + rows * K) + cols`, two
/// offsets blocks over the scalar pointer `a_ptr + batch`; B's terms come columns first, with a
/// scalar (the batch) between them, a third block of one element. The plan takes the blocks as
/// one sum (`ptr_sum`: a row and a column term), so the loop has its tensor-map version as
/// `hopper_k_loop` does; its checks evaluate each block in its own type, as the kernel does, and
/// add them in `i64`. The chunks of the `cp.async` versions keep one `i32` offset each, the
/// blocks' sum when it fits.
#[kernel(BM = [64], BN = [16], BK = [16])]
pub fn tma_nested_ptrs<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f32>, M: i32, N: i32, K: i32) {
    let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
    let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
    let offs_k = arange(0, BK);
    let batch = program_id(2);
    let mut a_ptrs = a_ptr + batch * M * K + offs_m.as_col() * K + offs_k.as_row();
    let mut b_ptrs = b_ptr + offs_n.as_row() + batch * K * N + offs_k.as_col() * N;
    let mut acc = zeros::<f32>([BM, BN]);
    for k in 0..cdiv(K, BK) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BK;
        b_ptrs += BK * N;
    }
    store(c_ptr + batch * M * N + offs_m.as_col() * N + offs_n.as_row(), acc);
}

/// Flash attention's loop over key blocks (one warpgroup, 64x64 tiles) with its key and value
/// pointers written as Triton's tutorial writes them, `k_ptr + cols[None, :] * sk + offs_d[:,
/// None]` (two offsets blocks; the values' terms in the other order). The operands are copied
/// ahead; on sm_90a with tensor maps (`pipeline/ahead.rs`: K^T staged transposed, V as
/// written), each block of the offsets moving as a whole with the loop variable, and the
/// checks before the loop summing the blocks in `i64` (K^T's: each block within its type's
/// range over the tile, `tma_no_wrap`).
#[kernel(BM = [64], BN = [64], D = [64])]
pub fn ahead_nested_ptrs<const BM: i32, const BN: i32, const D: i32>(q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, v_ptr: Ptr<f16>, o_ptr: Ptr<f16>, n: i32, sk: i32, sv: i32) {
    let offs_m = program_id(0) * BM + arange(0, BM);
    let offs_n = arange(0, BN);
    let offs_d = arange(0, D);
    let q = load(q_ptr + offs_m.as_col() * D + offs_d.as_row());
    let mut m_i = full::<f32>([BM], f32::NEG_INFINITY);
    let mut l_i = full::<f32>([BM], 1.0);
    let mut acc = zeros::<f32>([BM, D]);
    for start_n in range(0, n, BN) {
        let cols = start_n + offs_n;
        let k = load(k_ptr + cols.as_row() * sk + offs_d.as_col(), cols.as_row() < n, 0.0);
        let qk = dot(q, k);
        let m_ij = maximum(m_i, qk.max(1));
        let p = exp2(qk - m_ij.as_col());
        let alpha = exp2(m_i - m_ij);
        l_i = l_i * alpha + p.sum(1);
        acc = acc * alpha.as_col();
        let v = load(v_ptr + offs_d.as_row() + cols.as_col() * sv, cols.as_col() < n, 0.0);
        acc = dot(p.to::<f16>(), v, acc);
        m_i = m_ij;
    }
    store(o_ptr + offs_m.as_col() * D + offs_d.as_row(), (acc / l_i.as_col()).to::<f16>());
}
