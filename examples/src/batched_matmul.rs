//! Batched matrix multiplication: `C[i] = A[i] @ B[i]` for a batch of f16 matrices (3-D
//! tensors of any strides), f32 accumulation. The batch index is `program_id(1)`; each program advances the three base
//! pointers to its batch entry and then runs the seeds' tiled K loop, so every batch entry
//! takes the same fast path as one matmul (tensor maps on sm_90a, `cp.async` pipelining).

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

/// Grid `(cdiv(M, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N), batch)`: axis 0 picks the tile of
/// `C[i]` in grouped order (as in `matmul`), axis 1 the batch entry `i`.
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 8),
        config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 8),
        config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
        config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
    ],
    key = [M, N, K],
)]
pub fn batched_matmul_kernel<const BLOCK_SIZE_M: i32, const BLOCK_SIZE_N: i32, const BLOCK_SIZE_K: i32, const GROUP_SIZE_M: i32>(
    a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>,
    M: i32, N: i32, K: i32,
    stride_ab: i32, stride_am: i32, stride_ak: i32,
    stride_bb: i32, stride_bk: i32, stride_bn: i32,
    stride_cb: i32, stride_cm: i32, stride_cn: i32,
) {
    let pid = program_id(0);
    let batch = program_id(1);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    let group_id = pid / num_pid_in_group;
    let first_pid_m = group_id * GROUP_SIZE_M;
    let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
    let pid_m = first_pid_m + pid % group_size_m;
    let pid_n = pid % num_pid_in_group / group_size_m;

    // This program's batch entry of each operand.
    let a_base = a_ptr + batch * stride_ab;
    let b_base = b_ptr + batch * stride_bb;
    let c_base = c_ptr + batch * stride_cb;

    let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
    let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
    let offs_k = arange(0, BLOCK_SIZE_K);
    let mut a_ptrs = a_base + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
    let mut b_ptrs = b_base + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);
    let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    for k in 0..cdiv(K, BLOCK_SIZE_K) {
        let a = load(a_ptrs, offs_k.as_row() < K - k * BLOCK_SIZE_K, 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * BLOCK_SIZE_K, 0.0);
        accumulator = dot(a, b, accumulator);
        a_ptrs += BLOCK_SIZE_K * stride_ak;
        b_ptrs += BLOCK_SIZE_K * stride_bk;
    }
    let c = accumulator.to::<f16>();
    let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
    let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let c_ptrs = c_base + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
    let c_mask = (offs_cm.as_col() < M) & (offs_cn.as_row() < N);
    store(c_ptrs, c, c_mask);
}

#[cfg(not(target_arch = "nvptx64"))]
/// A 3-D operand's `(batch, rows, cols)`, or a typed error naming it.
fn dims3(t: &Tensor<f16>, arg: &'static str) -> Result<(usize, usize, usize), LaunchError> {
    match t.shape() {
        [b, r, c] => Ok((*b, *r, *c)),
        s => Err(LaunchError::InvalidArgument { arg, expected: "a 3-D tensor (batch, rows, columns)".into(), found: format!("shape {s:?}") }),
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// The strides of a 3-D operand as `i32`, when every element it can address is within 2^31 - 1
/// elements of its first (the kernel's offsets are `i32`).
fn strides3(t: &Tensor<f16>, arg: &'static str) -> Result<[i32; 3], LaunchError> {
    let last: u128 = t.shape().iter().zip(t.strides()).map(|(&n, &s)| n.saturating_sub(1) as u128 * s as u128).sum();
    let too_big = || LaunchError::InvalidArgument { arg, expected: "offsets below 2^31".into(), found: format!("shape {:?}, strides {:?}", t.shape(), t.strides()) };
    if last > i32::MAX as u128 || t.shape().iter().any(|&n| n > i32::MAX as usize) {
        return Err(too_big());
    }
    let s = t.strides();
    Ok([s[0] as i32, s[1] as i32, s[2] as i32])
}

#[cfg(not(target_arch = "nvptx64"))]
/// `C[i] = A[i] @ B[i]` for `A` of shape `(batch, M, K)` and `B` of shape `(batch, K, N)`
/// (any strides), into a new contiguous
/// `(batch, M, N)` tensor.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for tensors that are not 3-D, batch or inner dimensions
/// that differ, or offsets beyond 2^31 - 1; [`LaunchError::Tensor`] when the output cannot be
/// allocated; the launch's own errors (for example tensors on different devices).
pub fn batched_matmul(a: &Tensor<f16>, b: &Tensor<f16>) -> Result<Tensor<f16>, LaunchError> {
    let (batch, m, _) = dims3(a, "a")?;
    let (_, _, n) = dims3(b, "b")?;
    let c = Tensor::<f16>::zeros(a.device(), &[batch, m, n])?;
    batched_matmul_into(a, b, &c)?;
    Ok(c)
}

#[cfg(not(target_arch = "nvptx64"))]
/// Like [`batched_matmul`], writing into `c` (shape `(batch, M, N)`, any strides whose batch
/// entries do not overlap).
///
/// # Errors
/// As [`batched_matmul`], and [`LaunchError::InvalidArgument`] for an output of the wrong shape.
pub fn batched_matmul_into(a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) -> Result<(), LaunchError> {
    let (batch, m, k) = dims3(a, "a")?;
    let (bb, kb, n) = dims3(b, "b")?;
    if bb != batch || kb != k {
        return Err(LaunchError::InvalidArgument { arg: "b", expected: format!("shape [{batch}, {k}, N] (a is {:?})", a.shape()), found: format!("shape {:?}", b.shape()) });
    }
    if c.shape() != [batch, m, n] {
        return Err(LaunchError::InvalidArgument { arg: "c", expected: format!("shape [{batch}, {m}, {n}]"), found: format!("shape {:?}", c.shape()) });
    }
    if batch > 65_535 {
        return Err(LaunchError::InvalidArgument { arg: "a", expected: "at most 65535 batch entries (grid axis 1)".into(), found: format!("{batch}") });
    }
    let (sa, sb, sc) = (strides3(a, "a")?, strides3(b, "b")?, strides3(c, "c")?);
    if batch == 0 || m == 0 || n == 0 {
        return Ok(());
    }
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    batched_matmul_kernel::launch(
        |meta: &batched_matmul_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N), batch as i32),
        a, b, c,
        mi, ni, ki,
        sa[0], sa[1], sa[2],
        sb[0], sb[1], sb[2],
        sc[0], sc[1], sc[2],
    )?;
    Ok(())
}
