//! Persistent matrix multiplication (Triton's tutorial 09, the version without tensor
//! descriptors): as many programs as the device has multiprocessors, each looping over the
//! output tiles `start_pid, start_pid + num_sms, ...` in grouped order, with the K loop written
//! as in the tutorial (pointers computed from the K tile's index, edge rows and columns clamped
//! with `where_` instead of wrapped with `% M`).

#[cfg(not(target_arch = "nvptx64"))]
use crate::matmul::{check_operands, MatmulError};
#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, Tensor};
use kernel_std::prelude::*;

/// `C = A @ B` for f16 `A` (M, K) and `B` (K, N), f32 accumulation, one program per
/// multiprocessor (`num_sms` programs, each computing every `num_sms`-th tile).
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 8),
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 8),
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 4),
        config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
        config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
    ],
    key = [M, N, K],
)]
pub fn matmul_persistent_kernel<const BLOCK_SIZE_M: i32, const BLOCK_SIZE_N: i32, const BLOCK_SIZE_K: i32, const GROUP_SIZE_M: i32>(
    a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>,
    M: i32, N: i32, K: i32,
    stride_am: i32, stride_ak: i32, stride_bk: i32, stride_bn: i32, stride_cm: i32, stride_cn: i32,
    num_sms: i32,
) {
    let start_pid = program_id(0);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let k_tiles = cdiv(K, BLOCK_SIZE_K);
    let num_tiles = num_pid_m * num_pid_n;
    let offs_k_for_mask = arange(0, BLOCK_SIZE_K);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    for tile_id in range(start_pid, num_tiles, num_sms) {
        let group_id = tile_id / num_pid_in_group;
        let first_pid_m = group_id * GROUP_SIZE_M;
        let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
        let pid_m = first_pid_m + tile_id % group_size_m;
        let pid_n = tile_id % num_pid_in_group / group_size_m;

        let start_m = pid_m * BLOCK_SIZE_M;
        let start_n = pid_n * BLOCK_SIZE_N;
        let offs_am = start_m + arange(0, BLOCK_SIZE_M);
        let offs_bn = start_n + arange(0, BLOCK_SIZE_N);
        let offs_am = where_(offs_am < M, offs_am, 0);
        let offs_bn = where_(offs_bn < N, offs_bn, 0);
        let offs_am = max_contiguous(multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M);
        let offs_bn = max_contiguous(multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N);

        let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
        for ki in 0..k_tiles {
            let offs_k = ki * BLOCK_SIZE_K + arange(0, BLOCK_SIZE_K);
            let a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
            let b_ptrs = b_ptr + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);
            let a = load(a_ptrs, offs_k_for_mask.as_row() < K - ki * BLOCK_SIZE_K, 0.0);
            let b = load(b_ptrs, offs_k_for_mask.as_col() < K - ki * BLOCK_SIZE_K, 0.0);
            accumulator = dot(a, b, accumulator);
        }

        let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
        let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
        let c = accumulator.to::<f16>();
        let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
        let c_mask = (offs_cm.as_col() < M) & (offs_cn.as_row() < N);
        store(c_ptrs, c, c_mask);
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// `a @ b` for f16 matrices of any strides, computed by [`matmul_persistent_kernel`] on
/// `min(multiprocessors, tiles)` programs.
///
/// # Errors
/// As [`crate::matmul::matmul`].
pub fn matmul_persistent(a: &Tensor<f16>, b: &Tensor<f16>) -> Result<Tensor<f16>, MatmulError> {
    let (m, n) = (a.shape().first().copied().unwrap_or(0), b.shape().get(1).copied().unwrap_or(0));
    let c = Tensor::<f16>::zeros(a.device(), &[m, n])?;
    matmul_persistent_into(a, b, &c)?;
    Ok(c)
}

#[cfg(not(target_arch = "nvptx64"))]
/// Like [`matmul_persistent`], writing into `c` (shape `(M, N)`, any strides, on `a`'s device).
///
/// # Errors
/// As [`crate::matmul::matmul_into`].
pub fn matmul_persistent_into(a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) -> Result<(), MatmulError> {
    let (mi, ni, ki) = check_operands(a, b, c)?;
    let sms = i32::try_from(a.device().multiprocessor_count()).unwrap_or(i32::MAX).max(1);
    matmul_persistent_kernel::launch(
        |meta: &matmul_persistent_kernel::Meta| (sms.min(cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N)).max(1),),
        a, b, c,
        mi, ni, ki,
        a.stride(0) as i32, a.stride(1) as i32,
        b.stride(0) as i32, b.stride(1) as i32,
        c.stride(0) as i32, c.stride(1) as i32,
        sms,
    )?;
    Ok(())
}
