//! Numerics under stress: f16 overflow, NaN and Inf through `dot`, `exp` and `where_`, and
//! zero-sized dimensions, compared with float64 reference semantics.

use examples::matmul::{matmul, matmul_into};
use kernel_runtime::{f16, Tensor};
use tests::kernels::special_values;
use tests::test_device;

/// f16 products that overflow f16 but not the f32 accumulator: the result is rounded once
/// at the end, so a sum that comes back into range is exact, and one that does not is inf.
#[test]
fn f16_inputs_accumulate_in_f32_without_intermediate_overflow() {
    let dev = test_device();
    // 300 * 300 = 90000 > f16::MAX (65504); four such products minus three: 90000 (inf in f16).
    let a = Tensor::<f16>::from_vec(&dev, &[1, 4], [300.0f32, 300.0, -300.0, 1.0].map(f16::from_f32).to_vec()).unwrap();
    let b = Tensor::<f16>::from_vec(&dev, &[4, 2], [300.0f32, 1.0, 300.0, 1.0, 300.0, 1.0, 0.5, 1.0].map(f16::from_f32).to_vec()).unwrap();
    let c = matmul(&a, &b, None).unwrap().to_f64_vec();
    // Column 0: 90000 + 90000 - 90000 + 0.5 = 90000.5 -> overflows f16 -> +inf.
    assert_eq!(c[0], f64::INFINITY);
    // Column 1: 300 + 300 - 300 + 1 = 301, exact.
    assert_eq!(c[1], 301.0);
}

#[test]
fn nan_and_inf_propagate_through_dot() {
    let dev = test_device();
    let inf = f16::INFINITY;
    let a = Tensor::<f16>::from_vec(&dev, &[3, 2], vec![f16::NAN, f16::ONE, inf, f16::ONE, inf, -inf]).unwrap();
    let b = Tensor::<f16>::from_vec(&dev, &[2, 1], vec![f16::ONE, f16::ONE]).unwrap();
    let c = matmul(&a, &b, None).unwrap().to_f64_vec();
    assert!(c[0].is_nan(), "NaN * 1 + 1 must be NaN, got {}", c[0]);
    assert_eq!(c[1], f64::INFINITY, "inf + 1");
    assert!(c[2].is_nan(), "inf - inf must be NaN, got {}", c[2]);
}

#[test]
fn nan_and_inf_through_exp_where_and_other() {
    let dev = test_device();
    let xs = [0.0f32, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 100.0, -100.0];
    let x = Tensor::<f32>::from_vec(&dev, &[8], xs.to_vec()).unwrap();
    let outs: Vec<Tensor<f32>> = (0..3).map(|_| Tensor::<f32>::full(&dev, &[16], 7.0).unwrap()).collect();
    special_values::launch((1,), &x, &outs[0], &outs[1], &outs[2], 8, 16).unwrap();
    let (e, w, o) = (outs[0].to_vec(), outs[1].to_vec(), outs[2].to_vec());
    for (k, v) in xs.iter().enumerate() {
        let want_exp = (*v as f64).exp() as f32;
        if want_exp.is_nan() {
            assert!(e[k].is_nan(), "exp({v}) = {}", e[k]);
        } else if want_exp.is_infinite() || want_exp == 0.0 {
            assert_eq!(e[k], want_exp, "exp({v})");
        } else {
            assert!(((e[k] - want_exp) / want_exp).abs() < 1e-5, "exp({v}) = {} want {want_exp}", e[k]);
        }
        // where_(v > 0, v, -v): NaN > 0 is false, so the NaN comes through -v.
        let want_w = if *v > 0.0 { *v } else { -*v };
        assert!(w[k] == want_w || (w[k].is_nan() && want_w.is_nan()), "where at {k}: {}", w[k]);
    }
    // Masked-off lanes take `other` = NaN.
    assert!(o[8..].iter().all(|v| v.is_nan()), "{:?}", &o[8..]);
    assert!(e[8..].iter().all(|v| v.is_nan()));
}

#[test]
fn zero_sized_dimensions() {
    let dev = test_device();
    for &(m, n, k) in &[(0usize, 5usize, 3usize), (4, 0, 3), (4, 5, 0), (0, 0, 0)] {
        let a = Tensor::<f16>::zeros(&dev, &[m, k]).unwrap();
        let b = Tensor::<f16>::zeros(&dev, &[k, n]).unwrap();
        let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
        matmul_into(&a, &b, &c, None).unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
        // An empty K sums nothing: every output element is exactly zero.
        assert!(c.to_vec().iter().all(|v| v.to_f32() == 0.0), "{m}x{n}x{k}");
        assert_eq!(c.shape(), &[m, n]);
    }
}
