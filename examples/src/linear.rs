//! A fused linear layer in bf16: `y = activation(x @ w + bias)` with f32 accumulation, the
//! bias added and the activation (GELU, exact or with PyTorch's tanh approximation) applied
//! to the accumulator before it is rounded to bf16 and stored, so that the product is
//! written once instead of three times (matmul, bias, activation as separate kernels).
//!
//! `x` is `(M, K)` and `w` is `(K, N)`, each with any strides: an `nn.Linear` weight stored
//! `(N, K)` is passed as its transposed view `weight.t()` and runs on the same fast path as a
//! row-major `w` (tensor maps and `wgmma` on sm_90a, `cp.async` and `mma.sync` elsewhere).

#[cfg(not(target_arch = "nvptx64"))]
use crate::matmul::{check_operands, dims2, MatmulError};
#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{bf16, cdiv, Func, Tensor};
use kernel_std::prelude::*;

#[kernel_module]
pub mod kernels {
    /// GELU as PyTorch's `nn.GELU()` computes it: `x * Φ(x) = 0.5 x (1 + erf(x / √2))`.
    #[helper]
    pub fn gelu(x: Block) -> Block {
        0.5 * x * (1.0 + erf(x * 0.70710678118654752))
    }

    /// GELU with the tanh approximation (`nn.GELU(approximate="tanh")`, GPT-2's):
    /// `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    #[helper]
    pub fn gelu_tanh(x: Block) -> Block {
        0.5 * x * (1.0 + tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)))
    }

    /// `C = ACTIVATION(A @ B + bias)`: A is (M, K), B is (K, N), bias is (N,), C is (M, N); the
    /// seeds' tiled K loop in grouped program order, the bias and activation in f32 on the
    /// accumulator.
    #[kernel(ACTIVATION = [None, Some(gelu), Some(gelu_tanh)])]
    #[autotune(
        configs = [
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 256, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 3, num_warps = 8),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 8),
            config(BLOCK_SIZE_M = 128, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 128, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
            config(BLOCK_SIZE_M = 64, BLOCK_SIZE_N = 64, BLOCK_SIZE_K = 64, GROUP_SIZE_M = 8, num_stages = 4, num_warps = 4),
        ],
        key = [M, N, K],
    )]
    pub fn linear_kernel<
        const BLOCK_SIZE_M: i32,
        const BLOCK_SIZE_N: i32,
        const BLOCK_SIZE_K: i32,
        const GROUP_SIZE_M: i32,
        const ACTIVATION: Option<Func>,
    >(
        a_ptr: Ptr<bf16>, b_ptr: Ptr<bf16>, bias_ptr: Ptr<bf16>, c_ptr: Ptr<bf16>,
        M: i32, N: i32, K: i32,
        stride_am: i32, stride_ak: i32,
        stride_bk: i32, stride_bn: i32,
        stride_bias: i32,
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

        let mut accumulator = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
        for k in 0..cdiv(K, BLOCK_SIZE_K) {
            let a = load(a_ptrs, offs_k.as_row() < K - k * BLOCK_SIZE_K, 0.0);
            let b = load(b_ptrs, offs_k.as_col() < K - k * BLOCK_SIZE_K, 0.0);
            accumulator = dot(a, b, accumulator);
            a_ptrs += BLOCK_SIZE_K * stride_ak;
            b_ptrs += BLOCK_SIZE_K * stride_bk;
        }

        // The bias of each column, added to every row while the accumulator is f32.
        let offs_cn = pid_n * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
        let bias = load(bias_ptr + offs_cn * stride_bias, offs_cn < N, 0.0).to::<f32>();
        accumulator = accumulator + bias.as_row();
        if let Some(activation) = ACTIVATION {
            accumulator = activation(accumulator);
        }
        let c = accumulator.to::<bf16>();

        let offs_cm = pid_m * BLOCK_SIZE_M + arange(0, BLOCK_SIZE_M);
        let c_ptrs = c_ptr + stride_cm * offs_cm.as_col() + stride_cn * offs_cn.as_row();
        let c_mask = (offs_cm.as_col() < M) & (offs_cn.as_row() < N);
        store(c_ptrs, c, c_mask);
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub use kernels::{gelu, gelu_tanh};

#[cfg(not(target_arch = "nvptx64"))]
/// `activation(x @ w + bias)` for bf16 `x` of shape `(M, K)`, `w` of shape `(K, N)` and `bias`
/// of shape `(N,)`, each with any strides, into a new contiguous `(M, N)` tensor; computed by
/// [`kernels::linear_kernel`] with f32 accumulation, rounded to bf16 once.
///
/// `activation` is `None`, `Some(gelu)` or `Some(gelu_tanh)`.
///
/// # Errors
/// As [`crate::matmul::matmul`] for `x` (as `a`) and `w` (as `b`), and
/// [`MatmulError::BiasShape`] for a bias that is not `(N,)`.
pub fn linear(x: &Tensor<bf16>, w: &Tensor<bf16>, bias: &Tensor<bf16>, activation: Option<Func>) -> Result<Tensor<bf16>, MatmulError> {
    let ((m, _), (_, n)) = (dims2(x, "x")?, dims2(w, "w")?);
    let y = Tensor::<bf16>::zeros(x.device(), &[m, n])?;
    linear_into(x, w, bias, &y, activation)?;
    Ok(y)
}

#[cfg(not(target_arch = "nvptx64"))]
/// Like [`linear`], writing into `y` (shape `(M, N)`, any strides, on `x`'s device).
///
/// # Errors
/// As [`linear`], and [`MatmulError::OutputShape`] for a `y` of the wrong shape.
pub fn linear_into(x: &Tensor<bf16>, w: &Tensor<bf16>, bias: &Tensor<bf16>, y: &Tensor<bf16>, activation: Option<Func>) -> Result<(), MatmulError> {
    let (mi, ni, ki) = check_operands(x, w, y)?;
    if bias.shape() != [ni as usize] {
        return Err(MatmulError::BiasShape { expected: ni as usize, found: bias.shape().to_vec() });
    }
    let stride_bias = i32::try_from(bias.stride(0)).map_err(|_| MatmulError::TooLarge { which: "bias", detail: format!("stride {}", bias.stride(0)) })?;
    kernels::linear_kernel::launch(
        |meta: &kernels::linear_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N),),
        x, w, bias, y,
        mi, ni, ki,
        x.stride(0) as i32, x.stride(1) as i32,
        w.stride(0) as i32, w.stride(1) as i32,
        stride_bias,
        y.stride(0) as i32, y.stride(1) as i32,
        activation,
    )?;
    Ok(())
}
