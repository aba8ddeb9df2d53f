//! Row-wise softmax (Triton's tutorial 02), in f32 and in f16 (computed in f32): a fused kernel
//! that holds a whole row in one block (rows of up to [`MAX_BLOCK_COLUMNS`] columns), and an
//! online kernel for rows of any length, which loops over a row twice (running maximum and
//! sum, then the outputs).
//!
//! The fused kernels' instances are a table of `(BLOCK_SIZE, num_warps)` pairs, Triton's
//! heuristic written out (4 warps, 8 from 2048 columns, 16 from 4096): one device entry per
//! block size, chosen by the wrapper for the row length. They are declared as autotune
//! configs only to tie each block size to its warp count; the wrapper launches the one it
//! needs with `launch_config` (`launch` would time them all, blocks too small for the row
//! included, and keep the fastest).

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{DType, LaunchError, Tensor};
use kernel_std::prelude::*;

/// One program per row; `BLOCK_SIZE` is a power of two at least the row length. The input
/// may have any strides (element `(r, c)` is at `r * input_row_stride + c * input_col_stride`);
/// the output's columns are contiguous. Launch a config with `launch_config` (see the module
/// documentation): [`block_config`] gives the one for a row length.
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE = 128, num_warps = 4),
        config(BLOCK_SIZE = 256, num_warps = 4),
        config(BLOCK_SIZE = 512, num_warps = 4),
        config(BLOCK_SIZE = 1024, num_warps = 4),
        config(BLOCK_SIZE = 2048, num_warps = 8),
        config(BLOCK_SIZE = 4096, num_warps = 16),
        config(BLOCK_SIZE = 8192, num_warps = 16),
        config(BLOCK_SIZE = 16384, num_warps = 16),
    ],
    key = [n_cols],
)]
pub fn softmax_kernel<const BLOCK_SIZE: i32>(
    output_ptr: Ptr<f32>, input_ptr: Ptr<f32>,
    input_row_stride: i32, input_col_stride: i32, output_row_stride: i32, n_cols: i32,
) {
    let row = program_id(0);
    let col_offsets = arange(0, BLOCK_SIZE);
    let mask = col_offsets < n_cols;
    let row_ptr = input_ptr + row * input_row_stride;
    let x = load(row_ptr + col_offsets * input_col_stride, mask, f32::NEG_INFINITY);
    let shifted = x - x.max(0);
    let numerator = exp(shifted);
    let denominator = numerator.sum(0);
    let out_ptr = output_ptr + row * output_row_stride;
    store(out_ptr + col_offsets, numerator / denominator, mask);
}

/// [`softmax_kernel`] for f16 rows: loaded, converted to f32, normalized in f32, rounded to
/// f16 when stored. The same configs; rows of up to 8192 columns at 40 registers per thread
/// (`maxnreg`: three blocks of 16 warps per SM where ptxas's own choice, 46, fits two).
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE = 128, num_warps = 4),
        config(BLOCK_SIZE = 256, num_warps = 4),
        config(BLOCK_SIZE = 512, num_warps = 4),
        config(BLOCK_SIZE = 1024, num_warps = 4),
        config(BLOCK_SIZE = 2048, num_warps = 8),
        config(BLOCK_SIZE = 4096, num_warps = 16),
        config(BLOCK_SIZE = 8192, num_warps = 16, maxnreg = 40),
        config(BLOCK_SIZE = 16384, num_warps = 16),
    ],
    key = [n_cols],
)]
pub fn softmax_f16_kernel<const BLOCK_SIZE: i32>(
    output_ptr: Ptr<f16>, input_ptr: Ptr<f16>,
    input_row_stride: i32, input_col_stride: i32, output_row_stride: i32, n_cols: i32,
) {
    let row = program_id(0);
    let col_offsets = arange(0, BLOCK_SIZE);
    let mask = col_offsets < n_cols;
    let row_ptr = input_ptr + row * input_row_stride;
    let x = load(row_ptr + col_offsets * input_col_stride, mask, f16::NEG_INFINITY).to::<f32>();
    let shifted = x - x.max(0);
    let numerator = exp(shifted);
    let denominator = numerator.sum(0);
    let out_ptr = output_ptr + row * output_row_stride;
    store(out_ptr + col_offsets, (numerator / denominator).to::<f16>(), mask);
}

/// Softmax of row `program_id(0)`, of any length, in two passes over it. The first keeps, in
/// each lane `j` of the block, the running maximum `m` and the running sum `s` of
/// `exp(x - m)` over the columns `j, j + BLOCK_SIZE, ...`: for a new `x`, if `x > m` then
/// `s = s * exp(m - x) + 1`, else `s = s + exp(x - m)` (one `exp` per element, `exp(-|x - m|)`);
/// masked-off lanes and -inf inputs add nothing. The lanes then combine: `M = max(m)`,
/// `S = sum(s * exp(m - M))`. The second pass stores `exp(x - M) / S`. Strides as
/// [`softmax_kernel`]'s.
#[kernel(BLOCK_SIZE = [4096], num_warps = 8)]
pub fn softmax_online_kernel<const BLOCK_SIZE: i32>(
    output_ptr: Ptr<f32>, input_ptr: Ptr<f32>,
    input_row_stride: i32, input_col_stride: i32, output_row_stride: i32, n_cols: i32,
) {
    let row = program_id(0);
    let row_ptr = input_ptr + row * input_row_stride;
    let out_ptr = output_ptr + row * output_row_stride;
    let mut m = full::<f32>([BLOCK_SIZE], f32::NEG_INFINITY);
    let mut s = zeros::<f32>([BLOCK_SIZE]);
    for off in range(0, n_cols, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < n_cols;
        let x = load(row_ptr + cols * input_col_stride, mask, f32::NEG_INFINITY);
        // exp(m_old - m_new) when x is the new maximum, else exp(x - m). An x of -inf (a
        // masked-off lane, or a -inf input) adds nothing: its `e` is NaN while `m` is -inf
        // too, which the select drops.
        let e = exp(-abs(x - m));
        s = where_(x > m, s * e + 1.0, s + where_(x > f32::NEG_INFINITY, e, 0.0));
        m = maximum(m, x);
    }
    let row_max = m.max(0);
    let inv_sum = 1.0 / (s * exp(m - row_max)).sum(0);
    for off in range(0, n_cols, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < n_cols;
        let x = load(row_ptr + cols * input_col_stride, mask, f32::NEG_INFINITY);
        store(out_ptr + cols, exp(x - row_max) * inv_sum, mask);
    }
}

/// [`softmax_online_kernel`] for f16 rows, computed in f32.
#[kernel(BLOCK_SIZE = [4096], num_warps = 8)]
pub fn softmax_online_f16_kernel<const BLOCK_SIZE: i32>(
    output_ptr: Ptr<f16>, input_ptr: Ptr<f16>,
    input_row_stride: i32, input_col_stride: i32, output_row_stride: i32, n_cols: i32,
) {
    let row = program_id(0);
    let row_ptr = input_ptr + row * input_row_stride;
    let out_ptr = output_ptr + row * output_row_stride;
    let mut m = full::<f32>([BLOCK_SIZE], f32::NEG_INFINITY);
    let mut s = zeros::<f32>([BLOCK_SIZE]);
    for off in range(0, n_cols, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < n_cols;
        let x = load(row_ptr + cols * input_col_stride, mask, f16::NEG_INFINITY).to::<f32>();
        let e = exp(-abs(x - m));
        s = where_(x > m, s * e + 1.0, s + where_(x > f32::NEG_INFINITY, e, 0.0));
        m = maximum(m, x);
    }
    let row_max = m.max(0);
    let inv_sum = 1.0 / (s * exp(m - row_max)).sum(0);
    for off in range(0, n_cols, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < n_cols;
        let x = load(row_ptr + cols * input_col_stride, mask, f16::NEG_INFINITY).to::<f32>();
        store(out_ptr + cols, (exp(x - row_max) * inv_sum).to::<f16>(), mask);
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// The `BLOCK_SIZE` of each config of [`softmax_kernel`] and [`softmax_f16_kernel`], in order.
const BLOCK_SIZES: [usize; 8] = [128, 256, 512, 1024, 2048, 4096, 8192, 16384];

#[cfg(not(target_arch = "nvptx64"))]
/// The longest rows the fused kernels hold in one block; [`softmax_into`] runs the online
/// kernel for longer ones.
pub const MAX_BLOCK_COLUMNS: usize = 16384;

#[cfg(not(target_arch = "nvptx64"))]
/// The config of [`softmax_kernel`] (and [`softmax_f16_kernel`]) for rows of `n_cols`
/// columns: the smallest block that holds a row, with Triton's warp count for it. `None`
/// beyond [`MAX_BLOCK_COLUMNS`].
pub fn block_config(n_cols: usize) -> Option<usize> {
    BLOCK_SIZES.iter().position(|&b| b >= n_cols)
}

#[cfg(not(target_arch = "nvptx64"))]
/// An element type the softmax kernels are built for: `f32` and `f16` (computed in f32).
pub trait SoftmaxDtype: DType {
    /// Launches config `config` of the fused kernel (see [`block_config`]), one program per row.
    #[allow(clippy::too_many_arguments)]
    fn launch_fused(
        config: usize, rows: u32, out: &Tensor<Self>, x: &Tensor<Self>,
        x_row_stride: i32, x_col_stride: i32, out_row_stride: i32, n_cols: i32,
    ) -> Result<(), LaunchError>;

    /// Launches the online kernel, one program per row.
    #[allow(clippy::too_many_arguments)]
    fn launch_online(
        rows: u32, out: &Tensor<Self>, x: &Tensor<Self>,
        x_row_stride: i32, x_col_stride: i32, out_row_stride: i32, n_cols: i32,
    ) -> Result<(), LaunchError>;
}

#[cfg(not(target_arch = "nvptx64"))]
/// The block size of the online kernels.
const ONLINE_BLOCK: i32 = 4096;

#[cfg(not(target_arch = "nvptx64"))]
impl SoftmaxDtype for f32 {
    fn launch_fused(config: usize, rows: u32, out: &Tensor<f32>, x: &Tensor<f32>, xr: i32, xc: i32, or: i32, n: i32) -> Result<(), LaunchError> {
        softmax_kernel::launch_config(config, (rows,), out, x, xr, xc, or, n)
    }

    fn launch_online(rows: u32, out: &Tensor<f32>, x: &Tensor<f32>, xr: i32, xc: i32, or: i32, n: i32) -> Result<(), LaunchError> {
        softmax_online_kernel::launch((rows,), out, x, xr, xc, or, n, ONLINE_BLOCK)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
impl SoftmaxDtype for f16 {
    fn launch_fused(config: usize, rows: u32, out: &Tensor<f16>, x: &Tensor<f16>, xr: i32, xc: i32, or: i32, n: i32) -> Result<(), LaunchError> {
        softmax_f16_kernel::launch_config(config, (rows,), out, x, xr, xc, or, n)
    }

    fn launch_online(rows: u32, out: &Tensor<f16>, x: &Tensor<f16>, xr: i32, xc: i32, or: i32, n: i32) -> Result<(), LaunchError> {
        softmax_online_f16_kernel::launch((rows,), out, x, xr, xc, or, n, ONLINE_BLOCK)
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// Softmax of each row of a 2-D tensor (`f32` or `f16`) of any strides and storage offset (a
/// transposed or narrowed view is read through its strides), into a new contiguous tensor.
/// Rows of up to [`MAX_BLOCK_COLUMNS`] columns run the fused kernel, longer ones the online
/// kernel.
///
/// # Errors
/// As [`softmax_into`]; [`LaunchError::Tensor`] when the output cannot be allocated.
pub fn softmax<T: SoftmaxDtype>(x: &Tensor<T>) -> Result<Tensor<T>, LaunchError> {
    let (rows, cols) = dims(x, "x")?;
    let out = Tensor::<T>::zeros(x.device(), &[rows, cols])?;
    softmax_into(x, &out)?;
    Ok(out)
}

#[cfg(not(target_arch = "nvptx64"))]
/// [`softmax`] into `out`: a tensor of `x`'s shape with contiguous columns (its rows may be
/// strided), on `x`'s device.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for an `x` that is not 2-D, an `out` of another shape or
/// with strided columns, or a view spanning more than 2^31 - 1 elements; the launch's errors
/// otherwise.
pub fn softmax_into<T: SoftmaxDtype>(x: &Tensor<T>, out: &Tensor<T>) -> Result<(), LaunchError> {
    run(x, out, false)
}

#[cfg(not(target_arch = "nvptx64"))]
/// [`softmax_into`] with the online kernel whatever the row length (what [`softmax_into`]
/// runs for rows longer than [`MAX_BLOCK_COLUMNS`]).
///
/// # Errors
/// As [`softmax_into`].
pub fn softmax_online_into<T: SoftmaxDtype>(x: &Tensor<T>, out: &Tensor<T>) -> Result<(), LaunchError> {
    run(x, out, true)
}

#[cfg(not(target_arch = "nvptx64"))]
/// `(rows, columns)` of a 2-D tensor.
fn dims<T: DType>(t: &Tensor<T>, arg: &'static str) -> Result<(usize, usize), LaunchError> {
    match t.shape() {
        [r, c] => Ok((*r, *c)),
        s => Err(LaunchError::InvalidArgument { arg, expected: "a 2-D tensor".into(), found: format!("shape {s:?}") }),
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// Checks the arguments and launches the fused kernel for rows it holds (unless `online`),
/// else the online kernel.
fn run<T: SoftmaxDtype>(x: &Tensor<T>, out: &Tensor<T>, online: bool) -> Result<(), LaunchError> {
    let (rows, cols) = dims(x, "x")?;
    if out.shape() != [rows, cols] {
        return Err(LaunchError::InvalidArgument { arg: "out", expected: format!("shape [{rows}, {cols}] (x's)"), found: format!("shape {:?}", out.shape()) });
    }
    let x_strides = x.strides_i32("x")?;
    let out_strides = out.strides_i32("out")?;
    if cols > 1 && out_strides[1] != 1 {
        return Err(LaunchError::InvalidArgument {
            arg: "out",
            expected: "contiguous columns (column stride 1)".into(),
            found: format!("shape {:?} with strides {:?}", out.shape(), out.strides()),
        });
    }
    if rows * cols == 0 {
        return Ok(());
    }
    // `x`'s offsets fit in i32 (checked above), so `rows` and `cols` do.
    let (r, n) = (rows as u32, cols as i32);
    match block_config(cols).filter(|_| !online) {
        Some(config) => T::launch_fused(config, r, out, x, x_strides[0], x_strides[1], out_strides[0], n),
        None => T::launch_online(r, out, x, x_strides[0], x_strides[1], out_strides[0], n),
    }
}
