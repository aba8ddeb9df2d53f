//! A crate of block kernels: `cargo build` builds them for the CPU backend and, through
//! build.rs, for the GPU, and embeds the GPU code in the binary.
#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]
kernel_std::embed_ptx!();

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

/// `out[i] = alpha * x[i] + y[i]` for `i < n`, one block of `BLOCK` elements per program.
#[kernel(BLOCK = [1024])]
pub fn axpy_kernel<const BLOCK: i32>(x: Ptr<f32>, y: Ptr<f32>, out: Ptr<f32>, alpha: f32, n: i32) {
    let offsets = program_id(0) * BLOCK + arange(0, BLOCK);
    let mask = offsets < n;
    let v = alpha * load(x + offsets, mask) + load(y + offsets, mask);
    store(out + offsets, v, mask);
}

/// `alpha * x + y` for contiguous vectors of the same length, on their device.
#[cfg(not(target_arch = "nvptx64"))]
pub fn axpy(alpha: f32, x: &Tensor<f32>, y: &Tensor<f32>) -> Result<Tensor<f32>, LaunchError> {
    x.require_contiguous("x")?;
    y.require_contiguous("y")?;
    let n = x.numel();
    let out = Tensor::<f32>::zeros(x.device(), &[n])?;
    let n = i32::try_from(n).expect("fewer than 2^31 elements");
    axpy_kernel::launch(|m: &axpy_kernel::Meta| (cdiv(n, m.BLOCK),), x, y, &out, alpha, n, 1024)?;
    Ok(out)
}
