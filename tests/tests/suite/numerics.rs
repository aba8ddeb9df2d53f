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
        // Results below the smallest normal f32 are flushed to zero on both backends (the
        // GPU's `ex2.approx.ftz`, as in Triton): exp(-100) is 0.
        let want_exp = (*v as f64).exp() as f32;
        let want_exp = if want_exp < f32::MIN_POSITIVE { 0.0 } else { want_exp };
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

/// f64 math is computed in f64 on both backends: every function within a few ulp of Rust's
/// own f64 functions (the GPU uses the hardware's `sqrt.rn.f64` and roundings and `libm`).
#[test]
fn f64_math_is_computed_in_f64() {
    use tests::kernels::math_f64;
    let dev = test_device();
    let n = 100usize;
    // Positive inputs across several magnitudes (logs and roots defined), some exact integers.
    let xs: Vec<f64> = (0..n).map(|i| if i % 10 == 0 { (i / 10 + 1) as f64 } else { 0.001 + (i as f64).powf(1.7) * 0.0371 }).collect();
    let x = Tensor::<f64>::from_vec(&dev, &[n], xs.clone()).unwrap();
    let out = Tensor::<f64>::full(&dev, &[11 * n], f64::NAN).unwrap();
    math_f64::launch((n.div_ceil(64),), &x, &out, n as i32, 64).unwrap();
    let got = out.to_vec();
    let fns: [(&str, fn(f64) -> f64); 11] = [
        ("exp", f64::exp),
        ("exp2", f64::exp2),
        ("log", f64::ln),
        ("log2", f64::log2),
        ("sqrt", f64::sqrt),
        ("rsqrt", |v| 1.0 / v.sqrt()),
        ("abs", f64::abs),
        ("sin", f64::sin),
        ("cos", f64::cos),
        ("floor", f64::floor),
        ("ceil", f64::ceil),
    ];
    for (f, (name, reference)) in fns.iter().enumerate() {
        for (i, &v) in xs.iter().enumerate() {
            let (g, w) = (got[f * n + i], reference(v));
            // 1e-14 relative: f32 math would be off by about 1e-7.
            assert!((g - w).abs() <= 1e-14 * w.abs().max(1e-300), "{name}({v}) = {g}, want {w} (rel {:e})", ((g - w) / w).abs());
        }
    }
}

/// `minimum`/`maximum` and the `min`/`max` reductions ignore a NaN operand (a block of NaNs
/// gives NaN); shifts by the width or more, or by a negative amount, shift everything out.
#[test]
fn nan_operands_of_min_max_and_out_of_range_shifts() {
    use tests::kernels::nan_minmax_shifts;
    let dev = test_device();
    let nan = f32::NAN;
    let a: Vec<f32> = vec![1.0, nan, 3.0, nan, -2.0, 0.5, 7.0, -1.0, 2.0, 2.0, nan, 4.0, -5.0, 6.0, 0.0, 1.5];
    let b: Vec<f32> = vec![2.0, 5.0, nan, nan, -3.0, 0.25, 8.0, -0.5, 2.0, 1.0, -9.0, nan, 5.0, -6.0, 0.0, 2.5];
    let v: Vec<i32> = vec![1, -16, 5, -1, 1, 1, -8, 3, 12345, -12345, 7, 1, i32::MIN, i32::MAX, 2, 64];
    let s: Vec<i32> = vec![4, 2, 31, 31, 32, 33, 40, -1, 0, 1, 100, i32::MIN, 1, 30, 3, 5];
    let t = |d: Vec<f32>| Tensor::<f32>::from_vec(&dev, &[16], d).unwrap();
    let (at, bt) = (t(a.clone()), t(b.clone()));
    let (lo, hi, red) = (t(vec![-7.0; 16]), t(vec![-7.0; 16]), t(vec![-7.0; 16]));
    let vt = Tensor::<i32>::from_vec(&dev, &[16], v.clone()).unwrap();
    let st = Tensor::<i32>::from_vec(&dev, &[16], s.clone()).unwrap();
    let shifted = Tensor::<i32>::full(&dev, &[32], -7).unwrap();
    nan_minmax_shifts::launch((1,), &at, &bt, &lo, &hi, &red, &vt, &st, &shifted, 16).unwrap();
    let same = |x: f32, y: f32| x == y || (x.is_nan() && y.is_nan());
    let (lo, hi, red, shifted) = (lo.to_vec(), hi.to_vec(), red.to_vec(), shifted.to_vec());
    for i in 0..16 {
        assert!(same(lo[i], a[i].min(b[i])), "minimum({}, {}) = {}", a[i], b[i], lo[i]);
        assert!(same(hi[i], a[i].max(b[i])), "maximum({}, {}) = {}", a[i], b[i], hi[i]);
    }
    assert_eq!((red[0], red[1]), (-5.0, 7.0), "min/max reductions over a block with NaNs");
    for i in 0..16 {
        let (w, k) = (v[i], s[i]);
        let want_shl = if (0..32).contains(&k) { w << k } else { 0 };
        let want_shr = if (0..32).contains(&k) { w >> k } else if w < 0 { -1 } else { 0 };
        assert_eq!(shifted[i], want_shl, "{w} << {k}");
        assert_eq!(shifted[16 + i], want_shr, "{w} >> {k}");
    }
}
