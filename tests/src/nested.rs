//! Operands whose pointers are written as Triton's tutorials write them, one offsets block
//! added after another (`p + rows * s + cols` is `(p + rows * s) + cols`), with a scalar between
//! them: on sm_90a they take the tensor-map paths as the parenthesised form does (tests:
//! `tests/tests/suite/nested.rs`).

use kernel_std::prelude::*;

/// `C[b] = A[b] @ B[b]` for a batch of row-major `M x K` and `K x N` f16 matrices, one batch
/// entry per `program_id(2)`, A's pointers rows first, B's columns first with the batch offset
/// between the terms: the software-pipelined K loop, with tensor maps where the rows are
/// 16-byte aligned.
#[kernel(BM = [64], BN = [64], BK = [32], num_warps = 4)]
pub fn nested_batched_matmul<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f32>, M: i32, N: i32, K: i32) {
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
    let rows = program_id(0) * BM + arange(0, BM);
    let cols = program_id(1) * BN + arange(0, BN);
    store(c_ptr + batch * M * N + rows.as_col() * N + cols.as_row(), acc, (rows.as_col() < M) & (cols.as_row() < N));
}

/// Flash attention's loop over the `n` keys (`D`-wide rows `sk` and `sv` elements apart) for
/// the `BM` query rows of `program_id(0)` (`D`-wide rows, contiguous), in exp2: the key and
/// value tiles, their pointers written nested (the values' terms in the other order), are
/// copied ahead, with tensor maps on sm_90a.
#[kernel(BM = [64], BN = [64], D = [64], num_warps = 4)]
pub fn nested_attention<const BM: i32, const BN: i32, const D: i32>(q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, v_ptr: Ptr<f16>, o_ptr: Ptr<f16>, n: i32, sk: i32, sv: i32) {
    let offs_m = program_id(0) * BM + arange(0, BM);
    let offs_n = arange(0, BN);
    let offs_d = arange(0, D);
    let q = load(q_ptr + offs_m.as_col() * D + offs_d.as_row(), offs_m.as_col() < n, 0.0);
    let mut m_i = full::<f32>([BM], f32::NEG_INFINITY);
    let mut l_i = full::<f32>([BM], 1.0);
    let mut acc = zeros::<f32>([BM, D]);
    for start_n in range(0, n, BN) {
        let start_n = multiple_of(start_n, BN);
        let cols = start_n + offs_n;
        let k = load(k_ptr + cols.as_row() * sk + offs_d.as_col(), cols.as_row() < n, 0.0);
        let qk = dot(q, k);
        let qk = where_(cols.as_row() < n, qk, f32::NEG_INFINITY);
        let m_ij = maximum(m_i, qk.max(1));
        let p = exp2(qk - m_ij.as_col());
        let alpha = exp2(m_i - m_ij);
        l_i = l_i * alpha + p.sum(1);
        acc = acc * alpha.as_col();
        let v = load(v_ptr + offs_d.as_row() + cols.as_col() * sv, cols.as_col() < n, 0.0);
        acc = dot(p.to::<f16>(), v, acc);
        m_i = m_ij;
    }
    store(o_ptr + offs_m.as_col() * D + offs_d.as_row(), (acc / l_i.as_col()).to::<f16>(), offs_m.as_col() < n);
}
