//! Row-wise softmax: a reduction kernel (max and sum along a row).

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{LaunchError, Tensor};
use kernel_std::prelude::*;

/// One program per row; `BLOCK_SIZE` is a power of two at least the row length.
#[kernel(BLOCK_SIZE = [128, 1024])]
pub fn softmax_kernel<const BLOCK_SIZE: i32>(
    output_ptr: Ptr<f32>, input_ptr: Ptr<f32>,
    input_row_stride: i32, output_row_stride: i32, n_cols: i32,
) {
    let row = program_id(0);
    let col_offsets = arange(0, BLOCK_SIZE);
    let mask = col_offsets < n_cols;
    let row_ptr = input_ptr + row * input_row_stride;
    let x = load(row_ptr + col_offsets, mask, f32::NEG_INFINITY);
    let shifted = x - x.max(0);
    let numerator = exp(shifted);
    let denominator = numerator.sum(0);
    let out_ptr = output_ptr + row * output_row_stride;
    store(out_ptr + col_offsets, numerator / denominator, mask);
}

#[cfg(not(target_arch = "nvptx64"))]
/// Softmax of each row of a 2-D tensor with at most 1024 columns.
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
    let out = Tensor::<f32>::zeros(x.device(), &[rows, cols]).map_err(|e| LaunchError::InvalidArgument {
        arg: "output",
        expected: "an allocatable tensor".into(),
        found: e.to_string(),
    })?;
    softmax_kernel::launch((rows as u32,), &out, x, x.stride(0) as i32, out.stride(0) as i32, cols as i32, block)?;
    Ok(out)
}
