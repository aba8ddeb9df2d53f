//! Low-memory dropout (Triton's tutorial 04): the keep mask is not stored but regenerated from
//! a seed with `rand(seed, offsets)`, so the backward pass (or a second call) reproduces it.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{LaunchError, Tensor};
use kernel_std::prelude::*;

/// `out[i] = x[i] / (1 - p)` where `rand(seed, i) > p`, else 0, for `i < n`.
#[kernel(BLOCK_SIZE = [1024])]
pub fn seeded_dropout_kernel<const BLOCK_SIZE: i32>(x_ptr: Ptr<f32>, output_ptr: Ptr<f32>, n_elements: i32, p: f32, seed: i32) {
    let offsets = program_id(0) * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask);
    let keep = rand(seed, offsets) > p;
    let output = where_(keep, x / (1.0 - p), 0.0);
    store(output_ptr + offsets, output, mask);
}

#[cfg(not(target_arch = "nvptx64"))]
/// Dropout of a contiguous tensor with probability `p` in `[0, 1)`, reproducible from `seed`:
/// the same seed drops the same elements on every call and on both backends.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for a `p` outside `[0, 1)`, a non-contiguous tensor or more
/// than 2^31 - 1 elements; [`LaunchError::Tensor`] when the output cannot be allocated; the
/// launch's errors otherwise.
pub fn seeded_dropout(x: &Tensor<f32>, p: f32, seed: i32) -> Result<Tensor<f32>, LaunchError> {
    if !(0.0..1.0).contains(&p) {
        return Err(LaunchError::InvalidArgument { arg: "p", expected: "a probability in [0, 1)".into(), found: format!("{p}") });
    }
    x.require_contiguous("x")?;
    let n = i32::try_from(x.numel())
        .map_err(|_| LaunchError::InvalidArgument { arg: "x", expected: "at most 2^31 - 1 elements".into(), found: format!("{}", x.numel()) })?;
    let out = Tensor::<f32>::zeros(x.device(), x.shape())?;
    if n == 0 {
        return Ok(out);
    }
    seeded_dropout_kernel::launch(((n as u32).div_ceil(1024),), x, &out, n, p, seed, 1024)?;
    Ok(out)
}
