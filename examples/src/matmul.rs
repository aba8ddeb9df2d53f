//! The seeds' matrix multiplication: `C = activation(A @ B)` in f16 with f32 accumulation,
//! grouped program ordering for L2 reuse, masked edges, and an optional fused activation.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, Device, Func, LaunchError, Tensor};
use kernel_std::prelude::*;

#[kernel_module]
pub mod kernels {
    /// LeakyReLU, fused into the matmul while the accumulator is still f32.
    #[helper]
    pub fn leaky_relu(x: Block) -> Block {
        where_(x >= 0.0, x, 0.01 * x)
    }

    /// Numerically stable logistic sigmoid.
    #[helper]
    pub fn sigmoid(x: Block) -> Block {
        let ret_true = 1.0 / (1.0 + exp(-x));
        let ret_false = exp(x) / (1.0 + exp(x));
        where_(x >= 0.0, ret_true, ret_false)
    }

    /// Swish (SiLU): `x * sigmoid(x)`.
    #[helper]
    pub fn swish(x: Block) -> Block {
        x * sigmoid(x)
    }

    /// Computes `C = ACTIVATION(A @ B)`: A is (M, K), B is (K, N), C is (M, N).
    #[kernel(ACTIVATION = [None, Some(leaky_relu), Some(swish)])]
    #[autotune(
        configs = [
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 8),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 32, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 32, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 5, num_warps = 2),
            config(BLOCK_SIZE_M = 32, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 32, GROUP_SIZE_M = 8, num_stages = 5, num_warps = 2),
            // Beyond the tutorial's list: small tiles with BLOCK_SIZE_K = 64 (half the K
            // iterations of the BLOCK_SIZE_K = 32 configs) for sizes up to about 1024, where
            // per-iteration latency, not tensor-core throughput, sets the time (BENCHMARKS.md).
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            // 128x192 tiles: fuller last waves where 128x256 tiles leave SMs idle (3072: 2.9
            // waves of 132 SMs instead of 2.2); four stages (five 40 KiB buffers on sm_90a),
            // which time better than three at 1536-3072 (BENCHMARKS.md).
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 192, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 8),
            // BLOCK_SIZE_K = 128: half the K iterations again for the small sizes, whose time
            // is per-iteration latency (each iteration's wait, barrier and issue).
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 128, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 4),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 128, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 4),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 128, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 4),
        ],
        key = [M, N, K],
    )]
    pub fn matmul_kernel<
        const BLOCK_SIZE_M: i32,
        const BLOCK_SIZE_N: i32,
        const BLOCK_SIZE_K: i32,
        const GROUP_SIZE_M: i32,
        const ACTIVATION: Option<Func>,
    >(
        a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>,
        M: i32, N: i32, K: i32,
        stride_am: i32, stride_ak: i32,
        stride_bk: i32, stride_bn: i32,
        stride_cm: i32, stride_cn: i32,
    ) {
        // Map the program id to the block of C it computes, in grouped order for L2 reuse.
        let pid = program_id(0);
        let num_pid_m = cdiv(M, BLOCK_SIZE_M);
        let num_pid_n = cdiv(N, BLOCK_SIZE_N);
        let num_pid_in_group = GROUP_SIZE_M * num_pid_n;
        let group_id = pid / num_pid_in_group;
        let first_pid_m = group_id * GROUP_SIZE_M;
        let group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M);
        let pid_m = first_pid_m + pid % group_size_m;
        let pid_n = pid % num_pid_in_group / group_size_m;

        // Pointers to the first blocks of A and B, advanced along K in the loop.
        let offs_am = (pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M)) % M;
        let offs_bn = (pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N)) % N;
        let offs_k = arange(0, BLOCK_SIZE_K);
        let mut a_ptrs = a_ptr + (offs_am.as_col() * stride_am + offs_k.as_row() * stride_ak);
        let mut b_ptrs = b_ptr + (offs_k.as_col() * stride_bk + offs_bn.as_row() * stride_bn);

        // Accumulate a [BLOCK_SIZE_M, BLOCK_SIZE_N] block in f32; mask the K edge.
        let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
        for k in 0..cdiv(K, BLOCK_SIZE_K) {
            let a = load(a_ptrs, offs_k.as_row() < K - k * BLOCK_SIZE_K, 0.0);
            let b = load(b_ptrs, offs_k.as_col() < K - k * BLOCK_SIZE_K, 0.0);
            accumulator = dot(a, b, accumulator);
            a_ptrs += BLOCK_SIZE_K * stride_ak;
            b_ptrs += BLOCK_SIZE_K * stride_bk;
        }
        // Fuse the activation while the accumulator is still f32.
        if let Some(activation) = ACTIVATION {
            accumulator = activation(accumulator);
        }
        let c = accumulator.to::<f16>();

        // Write back the block of C, masking the M and N edges.
        let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
        let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
        let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
        let c_mask = (offs_cm.as_col() < M) & (offs_cn.as_row() < N);
        store(c_ptrs, c, c_mask);
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use kernels::{leaky_relu, swish};

#[cfg(not(target_arch = "nvptx64"))]
/// Why [`matmul`] refused its inputs or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MatmulError {
    #[error("incompatible dimensions: a is {a_rows}x{a_cols} but b is {b_rows}x{b_cols} (a's columns must equal b's rows)")]
    IncompatibleDimensions { a_rows: usize, a_cols: usize, b_rows: usize, b_cols: usize },
    #[error("matmul needs 2-D tensors, got {which} with shape {shape:?}")]
    NotAMatrix { which: &'static str, shape: Vec<usize> },
    #[error("the output has shape {found:?}, expected {expected:?}")]
    OutputShape { expected: Vec<usize>, found: Vec<usize> },
    #[error("the bias has shape {found:?}, expected [{expected}] (one value per output column)")]
    BiasShape { expected: usize, found: Vec<usize> },
    #[error("{which} is too large for 32-bit offsets: {detail}")]
    TooLarge { which: &'static str, detail: String },
    #[error("a is on {a} but b is on {b}: move both to one device")]
    DeviceMismatch { a: String, b: String },
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Tensor(#[from] kernel_runtime::TensorError),
}

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) fn dims2<T: kernel_runtime::DType>(t: &Tensor<T>, which: &'static str) -> Result<(usize, usize), MatmulError> {
    match t.shape() {
        [r, c] => Ok((*r, *c)),
        s => Err(MatmulError::NotAMatrix { which, shape: s.to_vec() }),
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// Largest element offset a strided matrix can address must fit the kernel's i32 arithmetic.
fn check_i32<T: kernel_runtime::DType>(t: &Tensor<T>, which: &'static str) -> Result<(), MatmulError> {
    let (r, c) = dims2(t, which)?;
    let last = (r.saturating_sub(1)) as u128 * t.stride(0) as u128 + (c.saturating_sub(1)) as u128 * t.stride(1) as u128;
    if r > i32::MAX as usize || c > i32::MAX as usize || last > i32::MAX as u128 {
        return Err(MatmulError::TooLarge { which, detail: format!("shape {:?}, strides {:?}", t.shape(), t.strides()) });
    }
    Ok(())
}

#[cfg(not(target_arch = "nvptx64"))]
/// The checks of a matmul wrapper (`matmul_into`, `matmul_8bit`'s): shapes `(M, K) x (K, N) ->
/// (M, N)`, `a` and `b` on one device (the launch checks `c`'s), offsets within i32. Returns
/// `(M, N, K)`.
pub(crate) fn check_operands<A: kernel_runtime::DType, C: kernel_runtime::DType>(a: &Tensor<A>, b: &Tensor<A>, c: &Tensor<C>) -> Result<(i32, i32, i32), MatmulError> {
    let (m, k) = dims2(a, "a")?;
    let (kb, n) = dims2(b, "b")?;
    if k != kb {
        return Err(MatmulError::IncompatibleDimensions { a_rows: m, a_cols: k, b_rows: kb, b_cols: n });
    }
    if c.shape() != [m, n] {
        return Err(MatmulError::OutputShape { expected: vec![m, n], found: c.shape().to_vec() });
    }
    if a.device() != b.device() {
        return Err(MatmulError::DeviceMismatch { a: a.device().describe(), b: b.device().describe() });
    }
    check_i32(a, "a")?;
    check_i32(b, "b")?;
    check_i32(c, "c")?;
    Ok((m as i32, n as i32, k as i32))
}

#[cfg(not(target_arch = "nvptx64"))]
/// `activation(a @ b)` for f16 matrices of any strides, computed by [`kernels::matmul_kernel`].
///
/// `activation` is `None`, `Some(leaky_relu)` or `Some(swish)`.
pub fn matmul(a: &Tensor<f16>, b: &Tensor<f16>, activation: Option<Func>) -> Result<Tensor<f16>, MatmulError> {
    let (m, _) = dims2(a, "a")?;
    let (_, n) = dims2(b, "b")?;
    let c = Tensor::<f16>::zeros(a.device(), &[m, n])?;
    matmul_into(a, b, &c, activation)?;
    Ok(c)
}

#[cfg(not(target_arch = "nvptx64"))]
/// Like [`matmul`], writing into `c` (shape `(M, N)`, any strides, on `a`'s device).
pub fn matmul_into(a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>, activation: Option<Func>) -> Result<(), MatmulError> {
    let (mi, ni, ki) = check_operands(a, b, c)?;
    kernels::matmul_kernel::launch(
        |meta: &kernels::matmul_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N),),
        a, b, c,
        mi, ni, ki,
        a.stride(0) as i32, a.stride(1) as i32,
        b.stride(0) as i32, b.stride(1) as i32,
        c.stride(0) as i32, c.stride(1) as i32,
        activation,
    )?;
    Ok(())
}

#[cfg(not(target_arch = "nvptx64"))]
/// The device examples run on: the GPU when one is usable, else the CPU.
pub fn default_device() -> Device {
    Device::best()
}
