//! Element-wise addition of two vectors: the smallest complete kernel.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

/// `output[i] = x[i] + y[i]` for `i < n_elements`, one block of `BLOCK_SIZE` per program.
#[kernel(BLOCK_SIZE = [256, 1024])]
pub fn add_kernel<const BLOCK_SIZE: i32>(x_ptr: Ptr<f32>, y_ptr: Ptr<f32>, output_ptr: Ptr<f32>, n_elements: i32) {
    let pid = program_id(0);
    let offsets = pid * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask);
    let y = load(y_ptr + offsets, mask);
    store(output_ptr + offsets, x + y, mask);
}

/// `output[i] = x[i] + y[i]` over the row-major elements of two views of shape
/// `[n_elements / n_cols, n_cols]` with any strides (element `(r, c)` of `x` is at
/// `r * stride_xr + c * stride_xc`), into a contiguous `output`: what [`add`] launches for
/// inputs that are not contiguous.
#[kernel(BLOCK_SIZE = [1024])]
pub fn add_strided_kernel<const BLOCK_SIZE: i32>(
    x_ptr: Ptr<f32>, y_ptr: Ptr<f32>, output_ptr: Ptr<f32>,
    n_elements: i32, n_cols: i32,
    stride_xr: i32, stride_xc: i32, stride_yr: i32, stride_yc: i32,
) {
    let pid = program_id(0);
    let offsets = pid * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let rows = offsets / n_cols;
    let cols = offsets % n_cols;
    let x = load(x_ptr + rows * stride_xr + cols * stride_xc, mask);
    let y = load(y_ptr + rows * stride_yr + cols * stride_yc, mask);
    store(output_ptr + offsets, x + y, mask);
}

#[cfg(not(target_arch = "nvptx64"))]
/// `[row stride, column stride]` of `t` seen as a matrix whose rows are its last dimension:
/// the dimensions before the last merge into the rows when each steps over exactly the ones
/// after it (always true of a 1-D or 2-D view, and of a contiguous one). `strides` are `t`'s
/// strides as `i32` ([`Tensor::strides_i32`]). `None` when they do not merge.
fn matrix_strides(shape: &[usize], strides: &[i32]) -> Option<[i32; 2]> {
    let Some((_, lead)) = shape.split_last() else {
        return Some([0, 0]);
    };
    let col_stride = if shape[lead.len()] == 1 { 0 } else { strides[lead.len()] };
    // Innermost to outermost leading dimension: `rows` merged so far, `row_stride` apart.
    let (mut rows, mut row_stride) = (1usize, 0i64);
    for (&n, &s) in lead.iter().zip(strides).rev() {
        if n == 1 {
            continue;
        }
        if rows == 1 {
            row_stride = i64::from(s);
        } else if i64::from(s) != row_stride * rows as i64 {
            return None;
        }
        rows *= n;
    }
    Some([row_stride as i32, col_stride])
}

#[cfg(not(target_arch = "nvptx64"))]
/// Adds two tensors of the same shape, element by element, into a new contiguous tensor.
///
/// Contiguous inputs (storage offsets allowed) run [`add_kernel`]. Other layouts run
/// [`add_strided_kernel`] with their strides: any 1-D or 2-D view (a transposed matrix, a
/// column-narrowed one, a strided vector), and N-D views whose dimensions before the last
/// merge into one (see the error below).
///
/// # Errors
/// [`LaunchError::InvalidArgument`] when `y`'s shape differs from `x`'s, for more than
/// 2^31 - 1 elements or views spanning more than that, and for an N-D input whose dimensions
/// before the last do not merge (e.g. `transpose(0, 1)` of a 3-D tensor: call `.contiguous()`
/// first); [`LaunchError::Tensor`] when the output cannot be allocated; the launch's errors
/// otherwise.
pub fn add(x: &Tensor<f32>, y: &Tensor<f32>) -> Result<Tensor<f32>, LaunchError> {
    if x.shape() != y.shape() {
        return Err(LaunchError::InvalidArgument {
            arg: "y",
            expected: format!("shape {:?} (the shape of x)", x.shape()),
            found: format!("shape {:?}", y.shape()),
        });
    }
    let n = x.numel();
    if n > i32::MAX as usize {
        return Err(LaunchError::InvalidArgument { arg: "x", expected: "at most 2^31 - 1 elements".into(), found: format!("{n}") });
    }
    let out = Tensor::<f32>::zeros(x.device(), x.shape())?;
    let n = n as i32;
    if x.is_contiguous() && y.is_contiguous() {
        add_kernel::launch(|m: &add_kernel::Meta| (cdiv(n, m.BLOCK_SIZE),), x, y, &out, n, 1024)?;
        return Ok(out);
    }
    if n == 0 {
        return Ok(out);
    }
    let mut strides = [[0; 2]; 2];
    for (s, (t, arg)) in strides.iter_mut().zip([(x, "x"), (y, "y")]) {
        *s = matrix_strides(t.shape(), &t.strides_i32(arg)?).ok_or_else(|| LaunchError::InvalidArgument {
            arg,
            expected: "a tensor whose dimensions before the last merge into one (any 1-D or 2-D view does; \
                       call .contiguous() first)"
                .into(),
            found: format!("shape {:?} with strides {:?}", t.shape(), t.strides()),
        })?;
    }
    let [[sxr, sxc], [syr, syc]] = strides;
    let cols = x.shape().last().map_or(1, |&c| c as i32);
    add_strided_kernel::launch(
        |m: &add_strided_kernel::Meta| (cdiv(n, m.BLOCK_SIZE),),
        x, y, &out, n, cols, sxr, sxc, syr, syc, 1024,
    )?;
    Ok(out)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::matrix_strides;

    #[test]
    fn dimensions_before_the_last_merge_when_they_step_over_each_other() {
        // Contiguous [2, 3, 4]: 6 rows of 4, 4 elements apart.
        assert_eq!(matrix_strides(&[2, 3, 4], &[12, 4, 1]), Some([4, 1]));
        // Transposed 2-D, and a strided 1-D view.
        assert_eq!(matrix_strides(&[3, 2], &[1, 3]), Some([1, 3]));
        assert_eq!(matrix_strides(&[5], &[2]), Some([0, 2]));
        assert_eq!(matrix_strides(&[], &[]), Some([0, 0]));
        // Column-narrowed [2, 3, 2] of a [2, 3, 4]: the leading dimensions still merge.
        assert_eq!(matrix_strides(&[2, 3, 2], &[12, 4, 1]), Some([4, 1]));
        // Size-1 dimensions are skipped, wherever they are.
        assert_eq!(matrix_strides(&[2, 1, 3, 1], &[3, 99, 1, 77]), Some([1, 0]));
        // transpose(0, 1) of a [2, 3, 4]: shape [3, 2, 4], strides [4, 12, 1] do not merge.
        assert_eq!(matrix_strides(&[3, 2, 4], &[4, 12, 1]), None);
        // Row-narrowed inner dimension: [2, 2, 4] of a [2, 3, 4] does not merge either.
        assert_eq!(matrix_strides(&[2, 2, 4], &[12, 4, 1]), None);
    }
}
