//! Host-side test support.

use kernel_runtime::cpu::AssertionFailure;
use kernel_runtime::{f16, Device, LaunchError, Tensor};

/// The device the integration tests run on: the CPU backend, or the first GPU when
/// `KERNEL_TEST_DEVICE=cuda` (then a missing GPU is a test failure, not a silent fallback).
pub fn test_device() -> Device {
    match std::env::var("KERNEL_TEST_DEVICE").as_deref() {
        Ok("cuda") => match Device::cuda(0) {
            Ok(d) => d,
            Err(e) => panic!("KERNEL_TEST_DEVICE=cuda but no usable GPU: {e}"),
        },
        _ => Device::cpu(),
    }
}

/// The failed `device_assert` of a launch: returned by the launch (CPU backend, `KERNEL_SYNC=1`)
/// or by the device's next synchronization (GPU). The device is clean afterwards.
pub fn assertion_failure(dev: &Device, launched: Result<(), LaunchError>) -> AssertionFailure {
    let f = match launched {
        Err(e) => e.assertion().cloned().unwrap_or_else(|| panic!("not an assertion: {e}")),
        Ok(()) => {
            let e = dev.synchronize().expect_err("the failed assertion was not reported");
            e.assertion().cloned().unwrap_or_else(|| panic!("not an assertion: {e}"))
        }
    };
    dev.synchronize().expect("reported once");
    f
}

/// Pseudo-random 64-bit values, deterministic (a splitmix-style mix of `i + salt`): inputs
/// that cover a type's whole range.
pub fn spread(i: usize, salt: u64) -> u64 {
    let mut z = (i as u64).wrapping_add(salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^= z >> 29;
    z = z.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^ (z >> 32)
}

/// A random f16 matrix (normal(0, 1)) on `dev`, with its exact values as f64.
pub fn randn_f16(dev: &Device, rows: usize, cols: usize, seed: u64) -> (Tensor<f16>, Vec<f64>) {
    let t = Tensor::<f16>::randn(dev, &[rows, cols], seed).expect("allocate");
    let v = t.to_f64_vec();
    (t, v)
}

/// `act(a @ b)` in float64 from f16-exact inputs, row-major (m x k) times (k x n).
pub fn matmul_ref(a: &[f64], b: &[f64], m: usize, n: usize, k: usize, act: fn(f64) -> f64) -> Vec<f64> {
    kernel_runtime::testing::matmul_ref_f64(a, b, m, n, k).into_iter().map(act).collect()
}

pub fn identity(x: f64) -> f64 {
    x
}

pub fn leaky_relu(x: f64) -> f64 {
    if x >= 0.0 {
        x
    } else {
        0.01 * x
    }
}

pub fn swish(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// Largest |actual - expected| / (atol + rtol |expected|); <= 1 means close.
pub fn worst_ratio(actual: &[f64], expected: &[f64], atol: f64, rtol: f64) -> f64 {
    assert_eq!(actual.len(), expected.len(), "length mismatch");
    actual
        .iter()
        .zip(expected)
        .map(|(a, e)| {
            if a.is_nan() || e.is_nan() {
                if a.is_nan() && e.is_nan() {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                (a - e).abs() / (atol + rtol * e.abs())
            }
        })
        .fold(0.0, f64::max)
}
