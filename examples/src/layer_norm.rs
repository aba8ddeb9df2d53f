//! Layer normalization (Triton's tutorial 05): a forward kernel (one program per row, mean and
//! variance over the row in `BLOCK_SIZE` chunks) in f32 and in f16 (f32 statistics), and a
//! backward pass (f32) in two kernels: the
//! first computes `dx` per row and accumulates partial `dw`/`db` into one of `GROUP_SIZE_M`
//! rows of a buffer, under a per-row spin lock taken with `atomic_cas`; the second sums the
//! `GROUP_SIZE_M` partial rows.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{DType, LaunchError, Tensor};
use kernel_std::prelude::*;

/// `y = (x - mean) * rstd * w + b` for row `program_id(0)` of `x`, storing the row's `mean`
/// and `rstd = 1 / sqrt(var + eps)`. The rows of `x` and `y` are `stride_x` and `stride_y`
/// elements apart (the tutorial's one `stride`: here `x` may be a view of wider rows); columns
/// are contiguous.
#[kernel(BLOCK_SIZE = [256, 1024, 4096], num_warps = 8)]
pub fn layer_norm_fwd_fused<const BLOCK_SIZE: i32>(
    x_ptr: Ptr<f32>, y_ptr: Ptr<f32>, w_ptr: Ptr<f32>, b_ptr: Ptr<f32>,
    mean_ptr: Ptr<f32>, rstd_ptr: Ptr<f32>,
    stride_x: i32, stride_y: i32, N: i32, eps: f32,
) {
    // Map the program id to the row of X and Y it should compute.
    let row = program_id(0);
    let x_row = x_ptr + row * stride_x;
    let y_row = y_ptr + row * stride_y;
    // Compute the mean.
    let mut _mean = zeros::<f32>([BLOCK_SIZE]);
    for off in range(0, N, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let a = load(x_row + cols, cols < N, 0.0);
        _mean += a;
    }
    let mean = _mean.sum(0) / N;
    // Compute the variance.
    let mut _var = zeros::<f32>([BLOCK_SIZE]);
    for off in range(0, N, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let x = load(x_row + cols, cols < N, 0.0);
        let x = where_(cols < N, x - mean, 0.0);
        _var += x * x;
    }
    let var = _var.sum(0) / N;
    let rstd = 1.0 / sqrt(var + eps);
    // Write the mean and the reciprocal standard deviation.
    store(mean_ptr + row, mean);
    store(rstd_ptr + row, rstd);
    // Normalize and apply the linear transformation.
    for off in range(0, N, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < N;
        let w = load(w_ptr + cols, mask);
        let b = load(b_ptr + cols, mask);
        let x = load(x_row + cols, mask, 0.0);
        let x_hat = (x - mean) * rstd;
        let y = x_hat * w + b;
        store(y_row + cols, y, mask);
    }
}

/// [`layer_norm_fwd_fused`] for f16 `x`, `w`, `b` and `y`, as the tutorial runs it: the
/// inputs are converted to f32, the statistics (`mean`, `rstd`, f32) and `y` computed in f32,
/// and `y` rounded to f16 when stored. The configs are the tutorial's heuristic written out
/// (`BLOCK_SIZE` the next power of two of the row length, at most 8192 here, and
/// `num_warps = clamp(BLOCK_SIZE / 256, 1, 8)`), one device entry per block size:
/// [`layer_norm_f16_into`] launches the one for the row length with `launch_config` (`launch`
/// would time them all and keep the fastest, which is correct, as every block size loops over
/// the row, but not the tutorial's choice). Rows of 1025 to 2048 columns run at 32 registers
/// per thread (`maxnreg`: eight blocks of 8 warps per SM where ptxas's own choice, 40, fits six).
#[kernel]
#[autotune(
    configs = [
        config(BLOCK_SIZE = 256, num_warps = 1),
        config(BLOCK_SIZE = 512, num_warps = 2),
        config(BLOCK_SIZE = 1024, num_warps = 4),
        config(BLOCK_SIZE = 2048, num_warps = 8, maxnreg = 32),
        config(BLOCK_SIZE = 4096, num_warps = 8),
        config(BLOCK_SIZE = 8192, num_warps = 8),
    ],
    key = [N],
)]
pub fn layer_norm_fwd_fused_f16<const BLOCK_SIZE: i32>(
    x_ptr: Ptr<f16>, y_ptr: Ptr<f16>, w_ptr: Ptr<f16>, b_ptr: Ptr<f16>,
    mean_ptr: Ptr<f32>, rstd_ptr: Ptr<f32>,
    stride_x: i32, stride_y: i32, N: i32, eps: f32,
) {
    let row = program_id(0);
    let x_row = x_ptr + row * stride_x;
    let y_row = y_ptr + row * stride_y;
    // Compute the mean.
    let mut _mean = zeros::<f32>([BLOCK_SIZE]);
    for off in range(0, N, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let a = load(x_row + cols, cols < N, 0.0).to::<f32>();
        _mean += a;
    }
    let mean = _mean.sum(0) / N;
    // Compute the variance.
    let mut _var = zeros::<f32>([BLOCK_SIZE]);
    for off in range(0, N, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let x = load(x_row + cols, cols < N, 0.0).to::<f32>();
        let x = where_(cols < N, x - mean, 0.0);
        _var += x * x;
    }
    let var = _var.sum(0) / N;
    let rstd = 1.0 / sqrt(var + eps);
    store(mean_ptr + row, mean);
    store(rstd_ptr + row, rstd);
    // Normalize and apply the linear transformation.
    for off in range(0, N, BLOCK_SIZE) {
        let cols = off + arange(0, BLOCK_SIZE);
        let mask = cols < N;
        let w = load(w_ptr + cols, mask).to::<f32>();
        let b = load(b_ptr + cols, mask).to::<f32>();
        let x = load(x_row + cols, mask, 0.0).to::<f32>();
        let x_hat = (x - mean) * rstd;
        let y = x_hat * w + b;
        store(y_row + cols, y.to::<f16>(), mask);
    }
}

/// `dx` for row `program_id(0)` (`BLOCK_SIZE_N >= N`: the whole row in one block), and the
/// row's `dy * x_hat` and `dy` added into row `row % group_size_m` of `dw_ptr`/`db_ptr`
/// (`[group_size_m, N]`). `lock_ptr` holds `group_size_m` locks then `group_size_m` counts,
/// all zero at the launch; the first program to take a group's lock stores its partial sums,
/// the next ones add theirs. Rows are `stride_*` elements apart, columns contiguous.
#[kernel(BLOCK_SIZE_N = [256, 1024, 4096], num_warps = 8)]
pub fn layer_norm_bwd_dx_fused<const BLOCK_SIZE_N: i32>(
    dx_ptr: Ptr<f32>, dy_ptr: Ptr<f32>, dw_ptr: Ptr<f32>, db_ptr: Ptr<f32>,
    x_ptr: Ptr<f32>, w_ptr: Ptr<f32>, mean_ptr: Ptr<f32>, rstd_ptr: Ptr<f32>,
    lock_ptr: Ptr<i32>,
    stride_dx: i32, stride_dy: i32, stride_x: i32, N: i32, group_size_m: i32,
) {
    // Map the program id to the elements of X, DX and DY it should compute.
    let row = program_id(0);
    let cols = arange(0, BLOCK_SIZE_N);
    let mask = cols < N;
    let x_row = x_ptr + row * stride_x;
    let dy_row = dy_ptr + row * stride_dy;
    let dx_row = dx_ptr + row * stride_dx;
    // Offset the lock and the weight/bias gradient pointers for parallel reduction.
    let lock_id = row % group_size_m;
    let lock = lock_ptr + lock_id;
    let count = lock + group_size_m;
    let dw = dw_ptr + lock_id * N + cols;
    let db = db_ptr + lock_id * N + cols;
    // Load data to SRAM.
    let x = load(x_row + cols, mask, 0.0);
    let dy = load(dy_row + cols, mask, 0.0);
    let w = load(w_ptr + cols, mask);
    let mean = load(mean_ptr + row);
    let rstd = load(rstd_ptr + row);
    // Compute dx.
    let xhat = (x - mean) * rstd;
    let wdy = w * dy;
    let xhat = where_(mask, xhat, 0.0);
    let wdy = where_(mask, wdy, 0.0);
    let c1 = (xhat * wdy).sum(0) / N;
    let c2 = wdy.sum(0) / N;
    let dx = (wdy - (xhat * c1 + c2)) * rstd;
    // Write dx.
    store(dx_row + cols, dx, mask);
    // Accumulate partial sums for dw/db.
    let mut partial_dw = dy * xhat;
    let mut partial_db = dy;
    while atomic_cas(lock, 0, 1) == 1 {}
    let c = load(count);
    // First store doesn't accumulate.
    if c == 0 {
        atomic_xchg(count, 1);
    } else {
        partial_dw += load(dw, mask);
        partial_db += load(db, mask);
    }
    store(dw, partial_dw, mask);
    store(db, partial_db, mask);
    // Release the lock.
    atomic_xchg(lock, 0);
}

/// `final_dw[c] = sum of dw[r, c]` and the same for `db`, over the `M` rows of the `[M, N]`
/// partial sums, for the `BLOCK_SIZE_N` columns of program `program_id(0)`.
#[kernel(BLOCK_SIZE_M = [32], BLOCK_SIZE_N = [128])]
pub fn layer_norm_bwd_dwdb<const BLOCK_SIZE_M: i32, const BLOCK_SIZE_N: i32>(
    dw_ptr: Ptr<f32>, db_ptr: Ptr<f32>, final_dw_ptr: Ptr<f32>, final_db_ptr: Ptr<f32>,
    M: i32, N: i32,
) {
    // Map the program id to the elements of DW and DB it should compute.
    let pid = program_id(0);
    let cols = pid * BLOCK_SIZE_N + arange(0, BLOCK_SIZE_N);
    let mut dw = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    let mut db = zeros::<f32>([BLOCK_SIZE_M, BLOCK_SIZE_N]);
    // Iterate through the rows of DW and DB to sum the partial sums.
    for i in range(0, M, BLOCK_SIZE_M) {
        let rows = i + arange(0, BLOCK_SIZE_M);
        let mask = (rows.as_col() < M) & (cols.as_row() < N);
        let offs = rows.as_col() * N + cols.as_row();
        dw += load(dw_ptr + offs, mask, 0.0);
        db += load(db_ptr + offs, mask, 0.0);
    }
    // Write the final sum to the output.
    let sum_dw = dw.sum(0);
    let sum_db = db.sum(0);
    store(final_dw_ptr + cols, sum_dw, cols < N);
    store(final_db_ptr + cols, sum_db, cols < N);
}

#[cfg(not(target_arch = "nvptx64"))]
/// The `BLOCK_SIZE`s [`layer_norm_fwd_fused`] and [`layer_norm_bwd_dx_fused`] are built for.
const BLOCK_SIZES: [usize; 3] = [256, 1024, 4096];

#[cfg(not(target_arch = "nvptx64"))]
/// The most columns [`layer_norm_backward`] takes: its first kernel holds a whole row in one
/// block (the forward pass loops over longer rows).
pub const MAX_BACKWARD_COLUMNS: usize = 4096;

#[cfg(not(target_arch = "nvptx64"))]
/// The block a row of `n` columns runs with: the smallest that holds it, else the largest.
fn block_size(n: usize) -> usize {
    BLOCK_SIZES.into_iter().find(|b| *b >= n).unwrap_or(BLOCK_SIZES[2])
}

#[cfg(not(target_arch = "nvptx64"))]
/// How many rows of partial `dw`/`db` sums the backward pass keeps (Triton's choice by `n`,
/// at most `m`): rows `r` and `r + group` share a lock and a row of partial sums.
pub fn group_size_m(m: usize, n: usize) -> usize {
    let group = match n {
        0..=1024 => 256,
        1025..=4096 => 128,
        4097..=8192 => 96,
        _ => 64,
    };
    group.min(m).max(1)
}

#[cfg(not(target_arch = "nvptx64"))]
/// `(rows, columns)` of a 2-D tensor whose columns are contiguous (rows may be strided), and
/// its row stride.
fn rows_of<T: DType>(t: &Tensor<T>, arg: &'static str) -> Result<(usize, usize, i32), LaunchError> {
    let (m, n) = match t.shape() {
        [m, n] => (*m, *n),
        s => return Err(LaunchError::InvalidArgument { arg, expected: "a 2-D tensor [rows, columns]".into(), found: format!("shape {s:?}") }),
    };
    let strides = t.strides_i32(arg)?;
    if i32::try_from(n).is_err() {
        return Err(LaunchError::InvalidArgument { arg, expected: format!("at most {} columns", i32::MAX), found: format!("{n}") });
    }
    if n > 1 && strides[1] != 1 {
        return Err(LaunchError::InvalidArgument {
            arg,
            expected: "contiguous columns (column stride 1; call .contiguous() first)".into(),
            found: format!("shape {:?} with strides {:?}", t.shape(), t.strides()),
        });
    }
    Ok((m, n, strides[0]))
}

#[cfg(not(target_arch = "nvptx64"))]
/// The number of rows as the grid's size (one program per row).
fn rows_i32(m: usize) -> Result<i32, LaunchError> {
    i32::try_from(m).map_err(|_| LaunchError::InvalidArgument { arg: "x", expected: format!("at most {} rows", i32::MAX), found: format!("{m}") })
}

#[cfg(not(target_arch = "nvptx64"))]
/// Checks that `t` is a contiguous 1-D tensor of `len` elements.
fn vector_of<T: DType>(t: &Tensor<T>, arg: &'static str, len: usize, what: &str) -> Result<(), LaunchError> {
    if t.shape() != [len] {
        return Err(LaunchError::InvalidArgument { arg, expected: format!("shape [{len}] ({what})"), found: format!("shape {:?}", t.shape()) });
    }
    t.require_contiguous(arg)
}

#[cfg(not(target_arch = "nvptx64"))]
/// Layer normalization of each row of `x` (`[M, N]`, columns contiguous, rows of any stride):
/// `y = (x - mean) / sqrt(var + eps) * weight + bias` with the row's mean and biased variance,
/// and `weight`, `bias` of shape `[N]`. Returns `(y, mean, rstd)`: `y` a new contiguous
/// `[M, N]` tensor, `mean` and `rstd = 1 / sqrt(var + eps)` of shape `[M]` (what
/// [`layer_norm_backward`] takes).
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for an `x` that is not 2-D, has no columns or strided
/// columns, a `weight` or `bias` not a contiguous `[N]`, an `eps` negative or not finite, or
/// offsets beyond 2^31 - 1; [`LaunchError::Tensor`] when an output cannot be allocated; the
/// launch's errors otherwise.
pub fn layer_norm(x: &Tensor<f32>, weight: &Tensor<f32>, bias: &Tensor<f32>, eps: f32) -> Result<(Tensor<f32>, Tensor<f32>, Tensor<f32>), LaunchError> {
    let (m, n, stride_x) = rows_of(x, "x")?;
    if n == 0 {
        return Err(LaunchError::InvalidArgument { arg: "x", expected: "at least one column".into(), found: format!("shape {:?}", x.shape()) });
    }
    vector_of(weight, "weight", n, "x's columns")?;
    vector_of(bias, "bias", n, "x's columns")?;
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(LaunchError::InvalidArgument { arg: "eps", expected: "a finite eps >= 0".into(), found: format!("{eps}") });
    }
    let dev = x.device();
    let y = Tensor::<f32>::zeros(dev, &[m, n])?;
    let mean = Tensor::<f32>::zeros(dev, &[m])?;
    let rstd = Tensor::<f32>::zeros(dev, &[m])?;
    if m == 0 {
        return Ok((y, mean, rstd));
    }
    let stride_y = y.strides_i32("y")?[0];
    layer_norm_fwd_fused::launch((rows_i32(m)?,), x, &y, weight, bias, &mean, &rstd, stride_x, stride_y, n as i32, eps, block_size(n) as i32)?;
    Ok((y, mean, rstd))
}

#[cfg(not(target_arch = "nvptx64"))]
/// The `BLOCK_SIZE` of each config of [`layer_norm_fwd_fused_f16`], in order.
const F16_BLOCK_SIZES: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];

#[cfg(not(target_arch = "nvptx64"))]
/// The config of [`layer_norm_fwd_fused_f16`] for rows of `n` columns: the smallest block that
/// holds a row, else the largest (which loops over it).
pub fn f16_block_config(n: usize) -> usize {
    F16_BLOCK_SIZES.iter().position(|&b| b >= n).unwrap_or(F16_BLOCK_SIZES.len() - 1)
}

#[cfg(not(target_arch = "nvptx64"))]
/// [`layer_norm`] for f16 `x`, `weight` and `bias`: `y` is f16, `mean` and `rstd` f32, all
/// computed in f32 (Triton's tutorial 05 forward pass with its f16 inputs).
///
/// # Errors
/// As [`layer_norm_f16_into`]; [`LaunchError::Tensor`] when an output cannot be allocated.
#[allow(clippy::type_complexity)]
pub fn layer_norm_f16(x: &Tensor<f16>, weight: &Tensor<f16>, bias: &Tensor<f16>, eps: f32) -> Result<(Tensor<f16>, Tensor<f32>, Tensor<f32>), LaunchError> {
    let (m, n, _) = rows_of(x, "x")?;
    let dev = x.device();
    let y = Tensor::<f16>::zeros(dev, &[m, n])?;
    let mean = Tensor::<f32>::zeros(dev, &[m])?;
    let rstd = Tensor::<f32>::zeros(dev, &[m])?;
    layer_norm_f16_into(x, weight, bias, eps, &y, &mean, &rstd)?;
    Ok((y, mean, rstd))
}

#[cfg(not(target_arch = "nvptx64"))]
/// [`layer_norm_f16`] into `y` (x's shape, columns contiguous, rows of any stride), `mean` and
/// `rstd` (contiguous `[M]`).
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for an `x` that is not 2-D, has no columns or strided
/// columns, a `weight` or `bias` not a contiguous `[N]`, a `y`, `mean` or `rstd` of the wrong
/// shape or layout, an `eps` negative or not finite, or offsets beyond 2^31 - 1; the launch's
/// errors otherwise.
pub fn layer_norm_f16_into(
    x: &Tensor<f16>, weight: &Tensor<f16>, bias: &Tensor<f16>, eps: f32,
    y: &Tensor<f16>, mean: &Tensor<f32>, rstd: &Tensor<f32>,
) -> Result<(), LaunchError> {
    let (m, n, stride_x) = rows_of(x, "x")?;
    if n == 0 {
        return Err(LaunchError::InvalidArgument { arg: "x", expected: "at least one column".into(), found: format!("shape {:?}", x.shape()) });
    }
    vector_of(weight, "weight", n, "x's columns")?;
    vector_of(bias, "bias", n, "x's columns")?;
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(LaunchError::InvalidArgument { arg: "eps", expected: "a finite eps >= 0".into(), found: format!("{eps}") });
    }
    let (ym, yn, stride_y) = rows_of(y, "y")?;
    if (ym, yn) != (m, n) {
        return Err(LaunchError::InvalidArgument { arg: "y", expected: format!("x's shape [{m}, {n}]"), found: format!("shape {:?}", y.shape()) });
    }
    vector_of(mean, "mean", m, "x's rows")?;
    vector_of(rstd, "rstd", m, "x's rows")?;
    if m == 0 {
        return Ok(());
    }
    layer_norm_fwd_fused_f16::launch_config(f16_block_config(n), (rows_i32(m)?,), x, y, weight, bias, mean, rstd, stride_x, stride_y, n as i32, eps)
}

#[cfg(not(target_arch = "nvptx64"))]
/// The gradients of [`layer_norm`] with respect to `x`, `weight` and `bias`, from the
/// gradient `dy` of its output (`[M, N]`, columns contiguous), its input `x`, `weight`, and the
/// `mean` and `rstd` it returned. Returns `(dx, dweight, dbias)`: `dx` a new contiguous `[M, N]`
/// tensor, `dweight` and `dbias` of shape `[N]`. At most [`MAX_BACKWARD_COLUMNS`] columns.
///
/// The rows' contributions to `dweight` and `dbias` are summed in an order that differs from
/// run to run on a GPU (the programs of a group take its lock in any order).
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for a `dy` or `x` that is not 2-D, has no columns, more than
/// [`MAX_BACKWARD_COLUMNS`], or strided columns, shapes that do not match `x`'s, or offsets
/// beyond 2^31 - 1; [`LaunchError::Tensor`] when an output cannot be allocated; the launches'
/// errors otherwise.
pub fn layer_norm_backward(
    dy: &Tensor<f32>, x: &Tensor<f32>, weight: &Tensor<f32>, mean: &Tensor<f32>, rstd: &Tensor<f32>,
) -> Result<(Tensor<f32>, Tensor<f32>, Tensor<f32>), LaunchError> {
    let (m, n, stride_x) = rows_of(x, "x")?;
    if n == 0 || n > MAX_BACKWARD_COLUMNS {
        return Err(LaunchError::InvalidArgument {
            arg: "x",
            expected: format!("1 to {MAX_BACKWARD_COLUMNS} columns"),
            found: format!("shape {:?}", x.shape()),
        });
    }
    let (dm, dn, stride_dy) = rows_of(dy, "dy")?;
    if (dm, dn) != (m, n) {
        return Err(LaunchError::InvalidArgument { arg: "dy", expected: format!("x's shape [{m}, {n}]"), found: format!("shape {:?}", dy.shape()) });
    }
    vector_of(weight, "weight", n, "x's columns")?;
    vector_of(mean, "mean", m, "x's rows")?;
    vector_of(rstd, "rstd", m, "x's rows")?;
    let dev = x.device();
    let dx = Tensor::<f32>::zeros(dev, &[m, n])?;
    let dw = Tensor::<f32>::zeros(dev, &[n])?;
    let db = Tensor::<f32>::zeros(dev, &[n])?;
    if m == 0 {
        return Ok((dx, dw, db));
    }
    let group = group_size_m(m, n);
    // The partial sums (every row of them is written before it is read: the first program of
    // a group stores, the next ones add), then `group` locks and `group` counts, all zero.
    let partial_dw = Tensor::<f32>::zeros(dev, &[group, n])?;
    let partial_db = Tensor::<f32>::zeros(dev, &[group, n])?;
    let locks = Tensor::<i32>::zeros(dev, &[2 * group])?;
    let stride_dx = dx.strides_i32("dx")?[0];
    let (ni, gi) = (n as i32, group as i32);
    layer_norm_bwd_dx_fused::launch(
        (rows_i32(m)?,),
        &dx, dy, &partial_dw, &partial_db, x, weight, mean, rstd, &locks,
        stride_dx, stride_dy, stride_x, ni, gi,
        block_size(n) as i32,
    )?;
    layer_norm_bwd_dwdb::launch(|meta: &layer_norm_bwd_dwdb::Meta| (kernel_runtime::cdiv(ni, meta.BLOCK_SIZE_N),), &partial_dw, &partial_db, &dw, &db, gi, ni, 32, 128)?;
    Ok((dx, dw, db))
}
