//! Split K loops (`expand_device/split.rs`): an instance whose only loop accumulates
//! `acc = dot(a, b, acc)` from zero, with nothing stored before it, gets a second entry,
//! `<entry>__split`, for launches that run each program on several blocks. One warp: no
//! Hopper body, so the split entry exists for every target (see `hopper.rs` for sm_90a).

use kernel_std::prelude::*;

/// The seeds' loop, with A's pointer block read after the loop: in the split entry a part runs
/// its run of iterations (`split_range`) with the pointers moved to its first one, and `a_ptrs`
/// is moved on to where the whole loop leaves it (`__sk_n - __sk_it0 - __n` iterations on).
#[kernel(BM = [16], BN = [16], BK = [16], num_warps = 1)]
pub fn split_k<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {
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
    store(a_ptrs, zeros::<f16>([BM, BK]));
    acc = where_(acc >= 0.0, acc, 0.01 * acc);
    store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), acc.to::<f16>());
}
