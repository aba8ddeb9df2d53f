//! The persistent matmul (Triton's tutorial 09: one program per multiprocessor, each looping
//! over output tiles; pointers computed from the K tile's index; edge rows and columns clamped
//! with `where_`) against a float64 reference: every config with fewer and with more programs
//! than tiles, ragged and aligned shapes, transposed operands, NaN next to the operands, and the
//! wrapper's typed errors.

use examples::matmul::MatmulError;
use examples::matmul_persistent::{matmul_persistent, matmul_persistent_kernel};
use kernel_runtime::{cdiv, f16, Tensor};
use tests::{matmul_ref, worst_ratio};

const ATOL: f64 = 1e-2;
const RTOL: f64 = 1e-2;

/// A `rows x cols` f16 operand, contiguous or (`transposed`) the transpose of a contiguous
/// `cols x rows` tensor, inside a larger buffer whose other elements are NaN (a read past the
/// operand poisons the result); with its values in row-major order.
fn operand(dev: &kernel_runtime::Device, rows: usize, cols: usize, transposed: bool, seed: u64) -> (Tensor<f16>, Vec<f64>) {
    let (r, c) = if transposed { (cols, rows) } else { (rows, cols) };
    let vals = Tensor::<f16>::randn(&kernel_runtime::Device::cpu(), &[r, c], seed).unwrap().to_f64_vec();
    let sc = c + 8;
    let data = (0..(r + 1) * sc).map(|f| if f / sc < r && f % sc < c { f16::from_f64(vals[f / sc * c + f % sc]) } else { f16::NAN }).collect();
    let storage = Tensor::from_vec(dev, &[r + 1, sc], data).unwrap();
    let t = storage.narrow(0, 0, r).unwrap().narrow(1, 0, c).unwrap();
    if !transposed {
        return (t, vals);
    }
    let row_major = (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| vals[j * rows + i]).collect();
    (t.t(), row_major)
}

fn launch_config(cfg: usize, programs: i32, a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) {
    let (m, k, n) = (a.shape()[0] as i32, a.shape()[1] as i32, b.shape()[1] as i32);
    let s = |t: &Tensor<f16>, d: usize| t.stride(d) as i32;
    matmul_persistent_kernel::launch_config(
        cfg,
        |meta: &matmul_persistent_kernel::Meta| (programs.min(cdiv(m, meta.BLOCK_SIZE_M) * cdiv(n, meta.BLOCK_SIZE_N)),),
        a, b, c, m, n, k,
        s(a, 0), s(a, 1), s(b, 0), s(b, 1), s(c, 0), s(c, 1),
        programs,
    )
    .unwrap();
}

/// Every config, with 1, 3 and 1000 programs (each program loops over several tiles, or each
/// has at most one), on ragged shapes (edge rows and columns clamped, a K tail) and shapes whose
/// rows are 16-byte aligned, in the four operand layouts.
#[test]
fn every_config_any_number_of_programs() {
    let dev = tests::test_device();
    for (m, n, k, seed) in [(150, 270, 100, 1), (128, 256, 192, 3), (200, 72, 136, 5)] {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let (a, av) = operand(&dev, m, k, ta, seed);
            let (b, bv) = operand(&dev, k, n, tb, seed + 1);
            let want = matmul_ref(&av, &bv, m, n, k, tests::identity);
            for cfg in 0..matmul_persistent_kernel::CONFIGS.len() {
                for programs in [1, 3, 1000] {
                    let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
                    launch_config(cfg, programs, &a, &b, &c);
                    let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
                    assert!(r <= 1.0, "{m}x{n}x{k} (A transposed {ta}, B transposed {tb}), config {cfg}, {programs} programs: worst error ratio {r}");
                }
            }
        }
    }
}

/// The autotuned wrapper (one program per multiprocessor of the device).
#[test]
fn wrapper_matches_float64() {
    let dev = tests::test_device();
    let (m, n, k) = (300, 200, 160);
    let (a, av) = operand(&dev, m, k, false, 11);
    let (b, bv) = operand(&dev, k, n, false, 12);
    let c = matmul_persistent(&a, &b).unwrap();
    assert_eq!(c.shape(), &[m, n]);
    let r = worst_ratio(&c.to_f64_vec(), &matmul_ref(&av, &bv, m, n, k, tests::identity), ATOL, RTOL);
    assert!(r <= 1.0, "worst error ratio {r}");
}

#[test]
fn bad_shapes_are_typed_errors() {
    let dev = tests::test_device();
    let a = Tensor::<f16>::zeros(&dev, &[4, 8]).unwrap();
    let b = Tensor::<f16>::zeros(&dev, &[7, 3]).unwrap();
    assert!(matches!(matmul_persistent(&a, &b), Err(MatmulError::IncompatibleDimensions { .. })));
    let v = Tensor::<f16>::zeros(&dev, &[8]).unwrap();
    assert!(matches!(matmul_persistent(&v, &b), Err(MatmulError::NotAMatrix { .. })));
}
