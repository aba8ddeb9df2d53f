//! The quantized matmuls of `examples::matmul_8bit`: f8e4m3 with a scale and an f16 result
//! against a float64 reference (only the final rounding to f16 differs), i8 with exact i32
//! sums; every config, ragged shapes (rows of an odd number of bytes among them), B row-major
//! and as the transposed view of an (N, K) matrix (cuBLASLt's fp8 layout), and the wrappers'
//! typed errors.

use examples::matmul::MatmulError;
use examples::matmul_8bit::{matmul_fp8_into, matmul_fp8_kernel, matmul_i8_into, matmul_i8_kernel};
use kernel_runtime::{cdiv, f16, f8e4m3, Device, Tensor};
use tests::{spread, test_device};

/// A (rows, cols) operand of values `value(i)` in row-major order: contiguous, or
/// (`transposed`) the transposed view of a contiguous (cols, rows) tensor.
fn operand<T: kernel_runtime::DType>(dev: &Device, rows: usize, cols: usize, transposed: bool, value: impl Fn(usize) -> T) -> Tensor<T> {
    let v: Vec<T> = (0..rows * cols).map(&value).collect();
    if !transposed {
        return Tensor::from_vec(dev, &[rows, cols], v).unwrap();
    }
    let vt: Vec<T> = (0..rows * cols).map(|i| v[(i % rows) * cols + i / rows]).collect();
    Tensor::from_vec(dev, &[cols, rows], vt).unwrap().t()
}

fn ref_f64(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    (0..m * n).map(|ij| (0..k).map(|p| a[(ij / n) * k + p] * b[p * n + ij % n]).sum()).collect()
}

#[test]
fn fp8_every_config_both_layouts() {
    let dev = test_device();
    for (m, n, k) in [(70, 90, 150), (128, 256, 128), (200, 136, 72), (66, 91, 75)] {
        for tb in [false, true] {
            let a = operand(&dev, m, k, false, |i| f8e4m3::from_f32((spread(i, 1) % 1000) as f32 / 100.0 - 5.0));
            let b = operand(&dev, k, n, tb, |i| f8e4m3::from_f32((spread(i, 2) % 1000) as f32 / 250.0 - 2.0));
            let scale = 0.375f32;
            let want: Vec<f64> = ref_f64(&a.to_f64_vec(), &b.to_f64_vec(), m, n, k).iter().map(|v| v * scale as f64).collect();
            for cfg in 0..matmul_fp8_kernel::CONFIGS.len() {
                let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
                let (mi, ni, ki) = (m as i32, n as i32, k as i32);
                matmul_fp8_kernel::launch_config(
                    cfg,
                    |meta: &matmul_fp8_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N),),
                    &a, &b, &c, mi, ni, ki,
                    a.stride(0) as i32, a.stride(1) as i32, b.stride(0) as i32, b.stride(1) as i32, c.stride(0) as i32, c.stride(1) as i32,
                    scale,
                )
                .unwrap();
                // f32 sums of f8 products, then one rounding to f16.
                for (i, (g, w)) in c.to_f64_vec().iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= 1e-3 * w.abs() + 1e-3, "{m}x{n}x{k}, B transposed {tb}, config {cfg}: c[{i}] = {g}, want {w}");
                }
            }
            let c = Tensor::<f16>::zeros(&dev, &[m, n]).unwrap();
            matmul_fp8_into(&a, &b, &c, scale).unwrap();
            assert!(c.to_f64_vec().iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-3 * w.abs() + 1e-3), "matmul_fp8_into");
        }
    }
}

#[test]
fn i8_every_config_both_layouts_exact() {
    let dev = test_device();
    for (m, n, k) in [(70, 90, 150), (128, 256, 1100), (200, 136, 72), (66, 91, 75)] {
        for tb in [false, true] {
            let a = operand(&dev, m, k, false, |i| spread(i, 3) as i8);
            let b = operand(&dev, k, n, tb, |i| spread(i, 4) as i8);
            let (av, bv): (Vec<i64>, Vec<i64>) = (a.to_vec().iter().map(|&v| v as i64).collect(), b.to_vec().iter().map(|&v| v as i64).collect());
            let want: Vec<i64> = (0..m * n).map(|ij| (0..k).map(|p| av[(ij / n) * k + p] * bv[p * n + ij % n]).sum()).collect();
            for cfg in 0..matmul_i8_kernel::CONFIGS.len() {
                let c = Tensor::<i32>::full(&dev, &[m, n], i32::MIN).unwrap();
                let (mi, ni, ki) = (m as i32, n as i32, k as i32);
                matmul_i8_kernel::launch_config(
                    cfg,
                    |meta: &matmul_i8_kernel::Meta| (cdiv(mi, meta.BLOCK_SIZE_M) * cdiv(ni, meta.BLOCK_SIZE_N),),
                    &a, &b, &c, mi, ni, ki,
                    a.stride(0) as i32, a.stride(1) as i32, b.stride(0) as i32, b.stride(1) as i32, c.stride(0) as i32, c.stride(1) as i32,
                )
                .unwrap();
                let got: Vec<i64> = c.to_vec().iter().map(|&v| v as i64).collect();
                assert!(got == want, "{m}x{n}x{k}, B transposed {tb}, config {cfg}: first difference at {:?}", got.iter().zip(&want).position(|(g, w)| g != w));
            }
            let c = Tensor::<i32>::zeros(&dev, &[m, n]).unwrap();
            matmul_i8_into(&a, &b, &c).unwrap();
            assert!(c.to_vec().iter().zip(&want).all(|(&g, &w)| g as i64 == w), "matmul_i8_into");
        }
    }
}

#[test]
fn wrappers_refuse_bad_shapes_with_typed_errors() {
    let dev = Device::cpu();
    let a = Tensor::<i8>::zeros(&dev, &[4, 8]).unwrap();
    let b = Tensor::<i8>::zeros(&dev, &[6, 5]).unwrap();
    let c = Tensor::<i32>::zeros(&dev, &[4, 5]).unwrap();
    let err = matmul_i8_into(&a, &b, &c).unwrap_err();
    assert!(matches!(err, MatmulError::IncompatibleDimensions { a_cols: 8, b_rows: 6, .. }), "{err}");
    assert_eq!(err.to_string(), "incompatible dimensions: a is 4x8 but b is 6x5 (a's columns must equal b's rows)");
    let a8 = Tensor::<f8e4m3>::zeros(&dev, &[4, 8]).unwrap();
    let b8 = Tensor::<f8e4m3>::zeros(&dev, &[8, 5]).unwrap();
    let c16 = Tensor::<f16>::zeros(&dev, &[5, 4]).unwrap();
    let err = matmul_fp8_into(&a8, &b8, &c16, 1.0).unwrap_err();
    assert_eq!(err.to_string(), "the output has shape [5, 4], expected [4, 5]");
    let v = Tensor::<f8e4m3>::zeros(&dev, &[8]).unwrap();
    let err = matmul_fp8_into(&v, &b8, &c16, 1.0).unwrap_err();
    assert!(matches!(err, MatmulError::NotAMatrix { which: "a", .. }), "{err}");
}
