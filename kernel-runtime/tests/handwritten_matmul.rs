//! End-to-end check of the CPU backend contract: Triton's matmul tutorial
//! kernel, written by hand the way `#[kernel]` generated code calls the
//! runtime, against an f64 reference.

#[path = "support/matmul_kernel.rs"]
mod matmul_kernel;

use kernel_runtime::__private::cpu::KernelError;
use kernel_runtime::testing::{assert_close, matmul_ref_f64};
use kernel_runtime::{f16, Device, LaunchError, Tensor};
use matmul_kernel::{matmul, Meta};

const META: Meta = Meta { block_m: 32, block_n: 32, block_k: 16, group_m: 4, leaky_relu: false };

fn reference(a: &Tensor<f16>, b: &Tensor<f16>, leaky: bool) -> Vec<f64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let c = matmul_ref_f64(&a.to_f64_vec(), &b.to_f64_vec(), m, n, k);
    if leaky {
        c.into_iter().map(|x| if x >= 0.0 { x } else { 0.01 * x }).collect()
    } else {
        c
    }
}

#[test]
fn non_square_matmul_matches_reference() {
    let dev = Device::cpu();
    let (m, n, k) = (97, 75, 50); // none a multiple of the blocks
    let a = Tensor::<f16>::randn(&dev, &[m, k], 1).unwrap();
    let b = Tensor::<f16>::randn(&dev, &[k, n], 2).unwrap();
    let c = matmul(&a, &b, META, true).unwrap();
    assert_eq!(c.shape(), &[m, n]);
    assert_close(&c, &reference(&a, &b, false)).unwrap();
}

#[test]
fn fused_leaky_relu_and_transposed_operand() {
    let dev = Device::cpu();
    let a = Tensor::<f16>::randn(&dev, &[64, 48], 3).unwrap();
    // b given as the transposed view of a [40, 48] tensor: strides (1, 48).
    let bt = Tensor::<f16>::randn(&dev, &[40, 48], 4).unwrap();
    let b = bt.t();
    assert!(!b.is_contiguous());
    let meta = Meta { leaky_relu: true, ..META };
    let c = matmul(&a, &b, meta, true).unwrap();
    assert_close(&c, &reference(&a, &b, true)).unwrap();
}

#[test]
fn forgetting_the_k_mask_is_reported_not_undefined() {
    let dev = Device::cpu();
    // K = 50 is not a multiple of BLOCK_K = 16: in the last K step the unmasked
    // loads of `a`'s last rows run past its end (the `a` load comes first).
    let a = Tensor::<f16>::randn(&dev, &[32, 50], 5).unwrap();
    let b = Tensor::<f16>::randn(&dev, &[50, 32], 6).unwrap();
    let err = matmul(&a, &b, META, false).unwrap_err();
    let LaunchError::Kernel(KernelError::OutOfBounds { kernel, line, op, arg, index, len, .. }) = err else {
        panic!("expected an out-of-bounds error, got {err:?}");
    };
    assert_eq!((kernel, line, op, arg, len), ("matmul_kernel", 30, "load", "a_ptr", 32 * 50));
    assert!(index >= 32 * 50);
}
