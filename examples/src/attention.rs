//! Flash-attention forward (Triton's tutorial 06): `O = softmax(Q K^T * sm_scale) V` for each
//! batch entry and head, f16 inputs and output, f32 softmax statistics and accumulator. Each
//! program computes `BLOCK_M` rows of `O` for one head, streaming over the keys and values in
//! blocks of `BLOCK_N` with the online softmax (a running row maximum `m_i` and sum `l_i`), so
//! the `N x N` scores are never stored. `CAUSAL` masks key `j > i` for query `i` and stops the
//! loop at the diagonal.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

/// Grid `(cdiv(n_ctx, BLOCK_M), batch * heads)`. 64 keys a step with 8 warps is the fastest
/// config on an H100 at head dimension 64 and when causal, but its `mma.sync` body (sm_80)
/// spills at head dimension 128: it is built for sm_90a only. On sm_90a the 32-key configs keep
/// to 128 registers per thread (`maxnreg`: two blocks of 8 warps per SM), which their `wgmma`
/// bodies fit without spilling (the `mma.sync` bodies do not: on sm_80 they have no limit).
/// sm_90a copies the key and value tiles with tensor maps (ARCHITECTURE.md, "Copies ahead").
/// Their offsets are written `base + (rows * stride + cols)`, one `i32` block: Triton's
/// `base + rows * stride + cols` takes the same maps, but its `cp.async` copies add two blocks
/// in 64 bits and the head-dimension-128 causal entry of the first 128-register config then
/// spills. `q`, `k`, `v` and `o` are 4-D
/// `(batch, heads, n_ctx, HEAD_DIM)` with the given batch, head and row strides and contiguous
/// rows (any layout whose last dimension is contiguous, such as PyTorch's
/// `(batch, n_ctx, heads, HEAD_DIM)` transposed to heads first). Products and sums are rounded
/// as written (`fp_fusion = false`; the scores' scaling is an explicit `fma`): contracting
/// `l_i * alpha + p.sum(1)` takes the sm_90a 128x64 causal entry at head dimension 64 past 128
/// registers, where two blocks of 8 warps no longer share an SM (BENCHMARKS.md, session 39).
#[kernel(HEAD_DIM = [64, 128], CAUSAL = [false, true], fp_fusion = false)]
#[autotune(
    configs = [
        config(BLOCK_M = 128, BLOCK_N = 32, num_stages = 2, num_warps = 8, archs = [sm_80]),
        config(BLOCK_M = 64, BLOCK_N = 32, num_stages = 2, num_warps = 4, archs = [sm_80]),
        config(BLOCK_M = 128, BLOCK_N = 32, num_stages = 2, num_warps = 8, archs = [sm_90a], maxnreg = 128),
        config(BLOCK_M = 64, BLOCK_N = 32, num_stages = 2, num_warps = 4, archs = [sm_90a], maxnreg = 128),
        config(BLOCK_M = 128, BLOCK_N = 64, num_stages = 2, num_warps = 8, archs = [sm_90a]),
    ],
    key = [n_ctx],
)]
pub fn attn_fwd<const BLOCK_M: i32, const BLOCK_N: i32, const HEAD_DIM: i32, const CAUSAL: bool>(
    q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, v_ptr: Ptr<f16>, o_ptr: Ptr<f16>, sm_scale: f32,
    stride_qz: i32, stride_qh: i32, stride_qm: i32,
    stride_kz: i32, stride_kh: i32, stride_kn: i32,
    stride_vz: i32, stride_vh: i32, stride_vn: i32,
    stride_oz: i32, stride_oh: i32, stride_om: i32,
    heads: i32, n_ctx: i32,
) {
    let start_m = program_id(0);
    let off_hz = program_id(1);
    let off_z = off_hz / heads;
    let off_h = off_hz % heads;
    let q_base = q_ptr + off_z * stride_qz + off_h * stride_qh;
    let k_base = k_ptr + off_z * stride_kz + off_h * stride_kh;
    let v_base = v_ptr + off_z * stride_vz + off_h * stride_vh;
    let o_base = o_ptr + off_z * stride_oz + off_h * stride_oh;
    let offs_m = start_m * BLOCK_M + arange(0, BLOCK_M);
    let offs_n = arange(0, BLOCK_N);
    let offs_d = arange(0, HEAD_DIM);
    let q = load(q_base + offs_m.as_col() * stride_qm + offs_d.as_row(), offs_m.as_col() < n_ctx, 0.0);
    // The running maximum and sum of each row, and its unnormalized output.
    let mut m_i = full::<f32>([BLOCK_M], f32::NEG_INFINITY);
    let mut l_i = full::<f32>([BLOCK_M], 1.0);
    let mut acc = zeros::<f32>([BLOCK_M, HEAD_DIM]);
    // exp(x) = exp2(x * log2(e)).
    let qk_scale = sm_scale * 1.44269504;
    let mut lo = 0;
    let mut hi = n_ctx;
    if CAUSAL {
        // As Triton's tutorial, in two stages: the key blocks before the diagonal, which every
        // row of the query block sees whole, without masks (with the row maxima of the raw
        // scores, scaled: a negative or NaN scale sends every block to the masked loop), then
        // the diagonal ones.
        hi = min((start_m + 1) * BLOCK_M, n_ctx);
        if sm_scale >= 0.0 {
            lo = start_m * BLOCK_M;
        }
        for start_n in range(0, lo, BLOCK_N) {
            let start_n = multiple_of(start_n, BLOCK_N);
            let cols = start_n + offs_n;
            // K^T: element (d, n) is key n's feature d.
            let k = load(k_base + (cols.as_row() * stride_kn + offs_d.as_col()));
            let qk = dot(q, k);
            let m_ij = maximum(m_i, qk.max(1) * qk_scale);
            let p = exp2(fma(qk, qk_scale, -m_ij.as_col()));
            let alpha = exp2(m_i - m_ij);
            l_i = l_i * alpha + p.sum(1);
            acc = acc * alpha.as_col();
            let v = load(v_base + (cols.as_col() * stride_vn + offs_d.as_row()));
            acc = dot(p.to::<f16>(), v, acc);
            m_i = m_ij;
        }
    }
    for start_n in range(lo, hi, BLOCK_N) {
        // As the tutorial: a hint the code generator proves (`lo` is a multiple of BLOCK_M).
        let start_n = multiple_of(start_n, BLOCK_N);
        let cols = start_n + offs_n;
        let k = load(k_base + (cols.as_row() * stride_kn + offs_d.as_col()), cols.as_row() < n_ctx, 0.0);
        let qk = dot(q, k);
        let keep = (cols.as_row() < n_ctx) & (!CAUSAL | (offs_m.as_col() >= cols.as_row()));
        let qk = where_(keep, qk * qk_scale, f32::NEG_INFINITY);
        let m_ij = maximum(m_i, qk.max(1));
        let p = exp2(qk - m_ij.as_col());
        let alpha = exp2(m_i - m_ij);
        l_i = l_i * alpha + p.sum(1);
        acc = acc * alpha.as_col();
        let v = load(v_base + (cols.as_col() * stride_vn + offs_d.as_row()), cols.as_col() < n_ctx, 0.0);
        acc = dot(p.to::<f16>(), v, acc);
        m_i = m_ij;
    }
    let o = (acc / l_i.as_col()).to::<f16>();
    store(o_base + offs_m.as_col() * stride_om + offs_d.as_row(), o, offs_m.as_col() < n_ctx);
}

#[cfg(not(target_arch = "nvptx64"))]
/// The strides of a 4-D `(batch, heads, n_ctx, head_dim)` operand's first three dimensions as
/// `i32`, or a typed error naming it: its shape must be `shape`, its last dimension contiguous
/// and every element within 2^31 - 1 elements of the first (the kernel's offsets are `i32`).
fn strides4(t: &Tensor<f16>, arg: &'static str, shape: &[usize]) -> Result<[i32; 3], LaunchError> {
    if t.shape() != shape {
        return Err(LaunchError::InvalidArgument { arg, expected: format!("shape {shape:?} (batch, heads, n_ctx, head_dim), like q"), found: format!("shape {:?}", t.shape()) });
    }
    let s = t.strides();
    if shape[3] > 1 && s[3] != 1 {
        return Err(LaunchError::InvalidArgument { arg, expected: "a contiguous last dimension (stride 1)".into(), found: format!("strides {s:?}") });
    }
    let last: u128 = shape.iter().zip(s).map(|(&n, &st)| n.saturating_sub(1) as u128 * st as u128).sum();
    if last > i32::MAX as u128 {
        return Err(LaunchError::InvalidArgument { arg, expected: "offsets below 2^31".into(), found: format!("shape {shape:?}, strides {s:?}") });
    }
    Ok([s[0] as i32, s[1] as i32, s[2] as i32])
}

#[cfg(not(target_arch = "nvptx64"))]
/// Attention forward: `softmax(q k^T * sm_scale) v` for `q`, `k`, `v` of shape
/// `(batch, heads, n_ctx, head_dim)` (f16, any strides with a contiguous last dimension),
/// `head_dim` 64 or 128; with `causal`, query `i` attends to keys `0..=i`. Returns a new
/// contiguous tensor of the same shape.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for a shape that is not 4-D or differs between the
/// operands, a head dimension other than 64 or 128, a last dimension that is not contiguous,
/// offsets beyond 2^31 - 1, or more than 65535 batch entries times heads;
/// [`LaunchError::Tensor`] when the output cannot be allocated; the launch's own errors.
pub fn attention(q: &Tensor<f16>, k: &Tensor<f16>, v: &Tensor<f16>, causal: bool, sm_scale: f32) -> Result<Tensor<f16>, LaunchError> {
    let o = Tensor::<f16>::zeros(q.device(), q.shape())?;
    attention_into(q, k, v, &o, causal, sm_scale)?;
    Ok(o)
}

#[cfg(not(target_arch = "nvptx64"))]
/// Like [`attention`], writing into `o` (the shape of `q`, any strides with a contiguous last
/// dimension).
///
/// # Errors
/// As [`attention`], and [`LaunchError::InvalidArgument`] for an output of another shape.
pub fn attention_into(q: &Tensor<f16>, k: &Tensor<f16>, v: &Tensor<f16>, o: &Tensor<f16>, causal: bool, sm_scale: f32) -> Result<(), LaunchError> {
    let shape = q.shape().to_vec();
    if shape.len() != 4 {
        return Err(LaunchError::InvalidArgument { arg: "q", expected: "a 4-D tensor (batch, heads, n_ctx, head_dim)".into(), found: format!("shape {shape:?}") });
    }
    let (batch, heads, n_ctx, head_dim) = (shape[0], shape[1], shape[2], shape[3]);
    if head_dim != 64 && head_dim != 128 {
        return Err(LaunchError::InvalidArgument { arg: "q", expected: "a head dimension of 64 or 128".into(), found: format!("{head_dim}") });
    }
    let (sq, sk, sv, so) = (strides4(q, "q", &shape)?, strides4(k, "k", &shape)?, strides4(v, "v", &shape)?, strides4(o, "o", &shape)?);
    if batch * heads > 65_535 {
        return Err(LaunchError::InvalidArgument { arg: "q", expected: "at most 65535 batch entries times heads (grid axis 1)".into(), found: format!("{}", batch * heads) });
    }
    if batch * heads * n_ctx == 0 {
        return Ok(());
    }
    let (n, bh) = (n_ctx as i32, (batch * heads) as i32);
    attn_fwd::launch(
        |meta: &attn_fwd::Meta| (cdiv(n, meta.BLOCK_M), bh),
        q, k, v, o, sm_scale,
        sq[0], sq[1], sq[2],
        sk[0], sk[1], sk[2],
        sv[0], sv[1], sv[2],
        so[0], so[1], so[2],
        heads as i32, n,
        head_dim as i32, causal,
    )?;
    Ok(())
}
