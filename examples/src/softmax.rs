//! Row-wise softmax: a reduction kernel (max and sum along a row).

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{LaunchError, Tensor};
use kernel_std::prelude::*;

/// One program per row; `BLOCK_SIZE` is a power of two at least the row length. The input
/// may have any strides (element `(r, c)` is at `r * input_row_stride + c * input_col_stride`);
/// the output's columns are contiguous.
#[kernel(BLOCK_SIZE = [128, 1024])]
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

#[cfg(not(target_arch = "nvptx64"))]
/// Softmax of each row of a 2-D tensor with at most 1024 columns, of any strides and storage
/// offset (a transposed or narrowed view is read through its strides). The result is a new
/// contiguous tensor.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for a tensor that is not 2-D, has more than 1024 columns,
/// or spans more than 2^31 - 1 elements; [`LaunchError::Tensor`] when the output cannot be
/// allocated; the launch's errors otherwise.
pub fn softmax(x: &Tensor<f32>) -> Result<Tensor<f32>, LaunchError> {
    let (rows, cols) = match x.shape() {
        [r, c] => (*r, *c),
        s => {
            return Err(LaunchError::InvalidArgument { arg: "x", expected: "a 2-D tensor".into(), found: format!("shape {s:?}") })
        }
    };
    let block = if cols <= 128 { 128 } else { 1024 };
    if cols > 1024 {
        return Err(LaunchError::InvalidArgument { arg: "x", expected: "at most 1024 columns".into(), found: format!("{cols}") });
    }
    let x_strides = x.strides_i32("x")?;
    let out = Tensor::<f32>::zeros(x.device(), &[rows, cols])?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let out_strides = out.strides_i32("output")?;
    // The output's `rows * cols` elements fit in 32-bit offsets, so `rows` fits in u32.
    softmax_kernel::launch((rows as u32,), &out, x, x_strides[0], x_strides[1], out_strides[0], cols as i32, block)?;
    Ok(out)
}
