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

#[cfg(not(target_arch = "nvptx64"))]
/// Adds two vectors of the same length.
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
    let out = Tensor::<f32>::zeros(x.device(), x.shape()).map_err(|e| LaunchError::InvalidArgument {
        arg: "output",
        expected: "an allocatable tensor".into(),
        found: e.to_string(),
    })?;
    let n = n as i32;
    add_kernel::launch(|m: &add_kernel::Meta| (cdiv(n, m.BLOCK_SIZE),), x, y, &out, n, 1024)?;
    Ok(out)
}
