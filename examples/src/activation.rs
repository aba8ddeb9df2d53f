//! A separate element-wise LeakyReLU over f16: the "+ separate activation" line of the
//! matmul benchmark (cuBLAS, then this kernel), against which the fused activation of
//! [`crate::matmul`] is compared.

#[cfg(not(target_arch = "nvptx64"))]
use kernel_runtime::{cdiv, LaunchError, Tensor};
use kernel_std::prelude::*;

/// `out[i] = leaky_relu(x[i])` for `i < n_elements` (slope 0.01, computed in f32), one
/// block of `BLOCK_SIZE` elements per program. `x_ptr` and `out_ptr` may be the same tensor.
#[kernel(BLOCK_SIZE = [1024])]
pub fn leaky_relu_kernel<const BLOCK_SIZE: i32>(x_ptr: Ptr<f16>, out_ptr: Ptr<f16>, n_elements: i32) {
    let pid = program_id(0);
    let offsets = pid * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask).to::<f32>();
    let y = where_(x >= 0.0, x, 0.01 * x);
    store(out_ptr + offsets, y.to::<f16>(), mask);
}

#[cfg(not(target_arch = "nvptx64"))]
/// Applies LeakyReLU to every element of a contiguous f16 tensor (any storage offset, so a
/// view of whole rows works), in place.
///
/// The kernel indexes `x` as a flat array, so a transposed or column-narrowed view is refused
/// rather than updated in the wrong places: apply it to `x.contiguous()` (a copy) instead.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] for a non-contiguous tensor or one of 2^31 or more
/// elements; the launch's errors otherwise.
pub fn leaky_relu_inplace(x: &Tensor<f16>) -> Result<(), LaunchError> {
    x.require_contiguous("x")?;
    let n = i32::try_from(x.numel())
        .map_err(|_| LaunchError::InvalidArgument { arg: "x", expected: "fewer than 2^31 elements".into(), found: x.numel().to_string() })?;
    leaky_relu_kernel::launch(|m: &leaky_relu_kernel::Meta| (cdiv(n, m.BLOCK_SIZE),), x, x, n, 1024)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use kernel_runtime::{f16, Device};

    fn leaky_relu_ref(v: f16) -> f64 {
        let v = f64::from(v.to_f32());
        if v >= 0.0 {
            v
        } else {
            0.01 * v
        }
    }

    #[test]
    fn leaky_relu_in_place_on_the_cpu() {
        let vals: Vec<f16> = (0..2500).map(|i| f16::from_f32((i as f32 - 1250.0) / 10.0)).collect();
        let x = Tensor::from_vec(&Device::cpu(), &[50, 50], vals.clone()).unwrap();
        leaky_relu_inplace(&x).unwrap();
        let expected: Vec<f64> = vals.iter().copied().map(leaky_relu_ref).collect();
        kernel_runtime::testing::assert_close(&x, &expected).unwrap();
    }

    /// A view of whole rows (contiguous, storage offset 3 rows in) is updated in place and the
    /// rows around it are not; transposed and column-narrowed views are refused, untouched.
    #[test]
    fn views_are_updated_at_their_offset_or_refused() {
        let vals: Vec<f16> = (0..60).map(|i| f16::from_f32((i as f32 - 30.0) / 4.0)).collect();
        let x = Tensor::from_vec(&Device::cpu(), &[10, 6], vals.clone()).unwrap();
        let rows = x.narrow(0, 3, 4).unwrap();
        assert_eq!(rows.storage_offset(), 18);
        leaky_relu_inplace(&rows).unwrap();
        let expected: Vec<f64> = vals
            .iter()
            .enumerate()
            .map(|(i, &v)| if (18..42).contains(&i) { leaky_relu_ref(v) } else { f64::from(v.to_f32()) })
            .collect();
        kernel_runtime::testing::assert_close(&x, &expected).unwrap();

        let before = x.to_vec();
        for (view, strides) in [(x.t(), "[1, 6]"), (x.narrow(1, 1, 4).unwrap(), "[6, 1]")] {
            let err = leaky_relu_inplace(&view).unwrap_err();
            assert!(matches!(err, LaunchError::InvalidArgument { arg: "x", .. }), "{err}");
            let msg = err.to_string();
            assert!(msg.contains("contiguous") && msg.contains(&format!("strides {strides}")), "{msg}");
        }
        assert_eq!(x.to_vec(), before, "a refused view was modified");
    }
}
