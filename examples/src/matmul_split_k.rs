//! Split-K matrix multiplication: `C = A @ B` for f16 `A` and `B`, with the K dimension cut
//! into `split_k` slices that separate programs reduce in parallel. Each program computes the
//! f32 partial product of its slice for one tile of C and adds it into C with `atomic_add`
//! (C starts at zero), so a tall-and-thin product (small M and N, large K) still fills the
//! GPU.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

/// Grid `(cdiv(M, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N), split_k)`: axis 0 picks the tile of C
/// (in grouped order, as in `matmul`), axis 1 the slice of K. Slice `s` of `num_programs(1)`
/// reduces the `BLOCK_SIZE_K`-wide chunks `s, s + split_k, s + 2 * split_k, ...` of K (as
/// Triton's split-K kernel does: the slices interleave, so every slice has at most one ragged
/// chunk), and `atomic_add`s its f32 tile into C, which must hold zeros at the launch.
#[kernel(BLOCK_SIZE_M = [64], BLOCK_SIZE_N = [64], BLOCK_SIZE_K = [32], GROUP_SIZE_M = [8])]
pub fn matmul_split_k_kernel<
    const BLOCK_SIZE_M: i32,
    const BLOCK_SIZE_N: i32,
    const BLOCK_SIZE_K: i32,
    const GROUP_SIZE_M: i32,
>(
    a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f32>,
    M: i32, N: i32, K: i32,
    stride_am: i32, stride_ak: i32,
    stride_bk: i32, stride_bn: i32,
    stride_cm: i32, stride_cn: i32,
) {
    // The tile of C, in grouped order for L2 reuse, and the slice of K.
    let pid = program_id(0);
    let pid_k = program_id(1);
    let split_k = num_programs(1);
    let num_pid_m = cdiv(M, BLOCK_SIZE_M);
    let num_pid_n = cdiv(N, BLOCK_SIZE_N);
    let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
    let group_id = pid / num_pid_in_group;
    let first_pid_m = group_id * GROUP_SIZE_M;
    let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
    let pid_m = first_pid_m + pid % group_size_m;
    let pid_n = pid % num_pid_in_group / group_size_m;

    // This slice's first chunk of K; the pointers step over the other slices' chunks.
    let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
    let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
    let offs_k = pid_k * BLOCK_SIZE_K + arange(0, BLOCK_SIZE_K);
    let mut a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
    let mut b_ptrs = b_ptr + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);

    let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    for k in 0..cdiv(K, BLOCK_SIZE_K * split_k) {
        // Triton's kernel binds `k_remaining = K - k * (BLOCK_SIZE_K * SPLIT_K)` first; here the
        // masks spell it out, as the software pipeliner takes a K loop of two loads, one `dot`
        // and pointer steps only (a `let` in the body would leave the loop unpipelined).
        let a = load(a_ptrs, offs_k.as_row() < K - k * (BLOCK_SIZE_K * split_k), 0.0);
        let b = load(b_ptrs, offs_k.as_col() < K - k * (BLOCK_SIZE_K * split_k), 0.0);
        accumulator = dot(a, b, accumulator);
        a_ptrs += BLOCK_SIZE_K * split_k * stride_ak;
        b_ptrs += BLOCK_SIZE_K * split_k * stride_bk;
    }

    // Add the partial tile into C, masking the M and N edges.
    let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
    let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
    let c_mask = (offs_cm.as_col() < M) & (offs_cn.as_row() < N);
    atomic_add(c_ptrs, accumulator, c_mask);
}

#[cfg(not(target_arch = "nvptx64"))]
/// The `BLOCK_SIZE_K` of the instance [`matmul_split_k`] launches.
const BLOCK_SIZE_K: usize = 32;

#[cfg(not(target_arch = "nvptx64"))]
/// The most K slices [`matmul_split_k`] accepts: the grid's axis 1 holds at most 65535 programs
/// on a GPU.
pub const MAX_SPLIT_K: usize = 65_535;

#[cfg(not(target_arch = "nvptx64"))]
/// `a @ b` in f32 for f16 matrices `a` (`[M, K]`) and `b` (`[K, N]`) of any strides, with K cut
/// into `split_k` slices (`1..=MAX_SPLIT_K`) reduced by separate programs and summed into the
/// result with `atomic_add`. The sum's order differs from run to run on a GPU (the float
/// additions round differently), unlike [`crate::matmul::matmul`]'s.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for a `split_k` out of range, a tensor that is not 2-D,
/// mismatched inner dimensions, or offsets beyond 2^31 - 1; [`LaunchError::Tensor`] when the
/// output cannot be allocated; the launch's errors otherwise (tensors on two devices:
/// [`LaunchError::DeviceMismatch`]).
pub fn matmul_split_k(a: &Tensor<f16>, b: &Tensor<f16>, split_k: usize) -> Result<Tensor<f32>, LaunchError> {
    if !(1..=MAX_SPLIT_K).contains(&split_k) {
        return Err(LaunchError::InvalidArgument { arg: "split_k", expected: format!("1 to {MAX_SPLIT_K} slices"), found: format!("{split_k}") });
    }
    let dims = |t: &Tensor<f16>, arg: &'static str| match t.shape() {
        [r, c] => Ok((*r, *c)),
        s => Err(LaunchError::InvalidArgument { arg, expected: "a 2-D tensor".into(), found: format!("shape {s:?}") }),
    };
    let (m, k) = dims(a, "a")?;
    let (kb, n) = dims(b, "b")?;
    if kb != k {
        return Err(LaunchError::InvalidArgument { arg: "b", expected: format!("{k} rows (a's columns)"), found: format!("shape {:?}", b.shape()) });
    }
    let (sa, sb) = (a.strides_i32("a")?, b.strides_i32("b")?);
    // Each program steps its pointers over `split_k` chunks of K at a time, in i32 offsets.
    let step = (BLOCK_SIZE_K * split_k) as i64 * i64::from(sa[1].max(sb[0]));
    if step > i64::from(i32::MAX) {
        return Err(LaunchError::InvalidArgument {
            arg: "split_k",
            expected: format!("at most {} slices for K strides {} (a) and {} (b): 32-bit pointer steps", i32::MAX as i64 / (BLOCK_SIZE_K as i64 * i64::from(sa[1].max(sb[0]))), sa[1], sb[0]),
            found: format!("{split_k}"),
        });
    }
    let c = Tensor::<f32>::zeros(a.device(), &[m, n])?;
    if m == 0 || n == 0 {
        return Ok(c);
    }
    let sc = c.strides_i32("c")?;
    // `strides_i32` checked that every offset of each tensor fits in i32, so its dimensions do.
    let (mi, ni, ki) = (m as i32, n as i32, k as i32);
    matmul_split_k_kernel::launch(
        |meta: &matmul_split_k_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N), split_k as i32),
        a, b, &c,
        mi, ni, ki,
        sa[0], sa[1],
        sb[0], sb[1],
        sc[0], sc[1],
        64, 64, BLOCK_SIZE_K as i32, 8,
    )?;
    Ok(c)
}
