//! Quantized matrix multiplications: `C = scale * (A @ B)` for `f8e4m3` operands, f32 sums and
//! an f16 result (what `torch._scaled_mm` computes with per-tensor scales), and `C = A @ B` for
//! `i8` operands with exact i32 sums (`torch._int_mm`). The seeds' matmul otherwise: grouped
//! program order, any strides, masked edges.

#[cfg(not(target_arch = "nvptx64"))]
use crate::matmul::{check_operands, MatmulError};
#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, Tensor};
use kernel_std::prelude::*;

/// `C = (scale * (A @ B)) as f16` for f8e4m3 `A` (M, K) and `B` (K, N).
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_warps = 8),
        config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_warps = 4),
    ],
    key = [M, N, K],
)]
pub fn matmul_fp8_kernel<const BLOCK_SIZE_M: i32, const BLOCK_SIZE_N: i32, const BLOCK_SIZE_K: i32, const GROUP_SIZE_M: i32>(
    a_ptr: Ptr<f8e4m3>, b_ptr: Ptr<f8e4m3>, c_ptr: Ptr<f16>,
    M: i32, N: i32, K: i32,
    stride_am: i32, stride_ak: i32,
    stride_bk: i32, stride_bn: i32,
    stride_cm: i32, stride_cn: i32,
    scale: f32,
) {
    let pid = program_id(0);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    let group_id = pid / num_pid_in_group;
    let first_pid_m = group_id * GROUP_SIZE_M;
    let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
    let pid_m = first_pid_m + pid % group_size_m;
    let pid_n = pid % num_pid_in_group / group_size_m;

    let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
    let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
    let offs_k = arange(0, BLOCK_SIZE_K);
    let mut a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
    let mut b_ptrs = b_ptr + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);
    let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    for k in 0..cdiv(K, BLOCK_SIZE_K) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BLOCK_SIZE_K, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BLOCK_SIZE_K, 0.0);
        accumulator = dot(a, b, accumulator);
        a_ptrs += BLOCK_SIZE_K * stride_ak;
        b_ptrs += BLOCK_SIZE_K * stride_bk;
    }
    let c = (accumulator * scale).to::<f16>();
    let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
    let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
    store(c_ptrs, c, (offs_cm.as_col() < M) & (offs_cn.as_row() < N));
}

/// `C = A @ B` for i8 `A` (M, K) and `B` (K, N): exact products, i32 sums (wrapping past i32).
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_warps = 8),
        config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_warps = 4),
    ],
    key = [M, N, K],
)]
pub fn matmul_i8_kernel<const BLOCK_SIZE_M: i32, const BLOCK_SIZE_N: i32, const BLOCK_SIZE_K: i32, const GROUP_SIZE_M: i32>(
    a_ptr: Ptr<i8>, b_ptr: Ptr<i8>, c_ptr: Ptr<i32>,
    M: i32, N: i32, K: i32,
    stride_am: i32, stride_ak: i32,
    stride_bk: i32, stride_bn: i32,
    stride_cm: i32, stride_cn: i32,
) {
    let pid = program_id(0);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    let group_id = pid / num_pid_in_group;
    let first_pid_m = group_id * GROUP_SIZE_M;
    let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
    let pid_m = first_pid_m + pid % group_size_m;
    let pid_n = pid % num_pid_in_group / group_size_m;

    let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
    let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
    let offs_k = arange(0, BLOCK_SIZE_K);
    let mut a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
    let mut b_ptrs = b_ptr + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);
    let mut accumulator = zeros::<i32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    for k in 0..cdiv(K, BLOCK_SIZE_K) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BLOCK_SIZE_K, 0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BLOCK_SIZE_K, 0);
        accumulator = dot(a, b, accumulator);
        a_ptrs += BLOCK_SIZE_K * stride_ak;
        b_ptrs += BLOCK_SIZE_K * stride_bk;
    }
    let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
    let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
    store(c_ptrs, accumulator, (offs_cm.as_col() < M) & (offs_cn.as_row() < N));
}

#[cfg(not(target_arch = "nvptx64"))]
/// `(scale * (a @ b)) as f16` for f8e4m3 matrices of any strides (`scale`: the product of
/// per-tensor scales), into `c` (M, N).
///
/// On the GPU the products run on the tensor cores with the operands staged as f16; the
/// operand layout cuBLASLt's fp8 GEMM takes (`b` a transposed view of an (N, K) matrix) and
/// the row-major one both work.
pub fn matmul_fp8_into(a: &Tensor<f8e4m3>, b: &Tensor<f8e4m3>, c: &Tensor<f16>, scale: f32) -> Result<(), MatmulError> {
    let (m, n, k) = check_operands(a, b, c)?;
    matmul_fp8_kernel::launch(
        |meta: &matmul_fp8_kernel::Meta| (cdiv(m, meta.BLOCK_SIZE_M) * cdiv(n, meta.BLOCK_SIZE_N),),
        a, b, c,
        m, n, k,
        a.stride(0) as i32, a.stride(1) as i32,
        b.stride(0) as i32, b.stride(1) as i32,
        c.stride(0) as i32, c.stride(1) as i32,
        scale,
    )?;
    Ok(())
}

#[cfg(not(target_arch = "nvptx64"))]
/// `a @ b` for i8 matrices of any strides, exact in i32 (sums wrap past i32), into `c` (M, N).
pub fn matmul_i8_into(a: &Tensor<i8>, b: &Tensor<i8>, c: &Tensor<i32>) -> Result<(), MatmulError> {
    let (m, n, k) = check_operands(a, b, c)?;
    matmul_i8_kernel::launch(
        |meta: &matmul_i8_kernel::Meta| (cdiv(m, meta.BLOCK_SIZE_M) * cdiv(n, meta.BLOCK_SIZE_N),),
        a, b, c,
        m, n, k,
        a.stride(0) as i32, a.stride(1) as i32,
        b.stride(0) as i32, b.stride(1) as i32,
        c.stride(0) as i32, c.stride(1) as i32,
    )?;
    Ok(())
}
