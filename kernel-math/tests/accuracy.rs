//! `erf` and `tanh` against `libm`'s f64 functions (correct to well under an f32 unit in the
//! last place): the error in f32 units in the last place of the exact value, over a sample of
//! every 61st f32 here and over every f32 with `--ignored` (about 8 minutes in release mode).

use kernel_math::Arith;

struct Host;
impl Arith for Host {
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    fn div(a: f32, b: f32) -> f32 {
        a / b
    }
}

/// The error of `got` in units in the last place of `exact` (rounded to f32).
fn ulps(got: f32, exact: f64) -> f64 {
    let e = exact as f32;
    if got == e {
        return 0.0;
    }
    let ulp = if e == 0.0 { f32::from_bits(1) as f64 } else { ((f32::from_bits(e.abs().to_bits() + 1) - e.abs()) as f64).max(f32::MIN_POSITIVE as f64 * f32::EPSILON as f64) };
    (got as f64 - exact).abs() / ulp
}

/// The largest error over the f32s whose bits are multiples of `step`, and where it is.
fn worst(f: fn(f32) -> f32, exact: fn(f64) -> f64, step: usize) -> (f64, f32) {
    let mut w = (0.0, 0.0f32);
    for bits in (0..=u32::MAX).step_by(step) {
        let x = f32::from_bits(bits);
        let (got, want) = (f(x), exact(x as f64));
        if x.is_nan() {
            assert!(got.is_nan(), "f({x}) = {got}, expected NaN");
            continue;
        }
        let u = ulps(got, want);
        assert!(got.abs() <= 1.0, "f({x}) = {got}, outside [-1, 1]");
        if u > w.0 {
            w = (u, x);
        }
    }
    w
}

fn erf(x: f32) -> f32 {
    kernel_math::erf::<Host>(x)
}
fn tanh(x: f32) -> f32 {
    kernel_math::tanh::<Host>(x)
}

#[test]
fn erf_is_within_two_ulps_on_a_sample() {
    let (u, x) = worst(erf, libm::erf, 61);
    assert!(u <= 2.0, "erf({x:e}) is {u:.2} ulps off");
}

#[test]
fn tanh_is_within_two_ulps_on_a_sample() {
    let (u, x) = worst(tanh, libm::tanh, 61);
    assert!(u <= 2.0, "tanh({x:e}) is {u:.2} ulps off");
}

#[test]
#[ignore = "every f32: about 8 minutes in release mode (cargo test -p kernel-math --release -- --ignored)"]
fn erf_and_tanh_are_within_two_ulps_on_every_f32() {
    let (u, x) = worst(erf, libm::erf, 1);
    println!("erf: largest error {u:.3} ulps at {x:e}");
    assert!(u <= 2.0);
    let (u, x) = worst(tanh, libm::tanh, 1);
    println!("tanh: largest error {u:.3} ulps at {x:e}");
    assert!(u <= 2.0);
}

#[test]
fn special_values() {
    for (f, name) in [(erf as fn(f32) -> f32, "erf"), (tanh, "tanh")] {
        assert_eq!(f(0.0).to_bits(), 0.0f32.to_bits(), "{name}(0)");
        assert_eq!(f(-0.0).to_bits(), (-0.0f32).to_bits(), "{name}(-0)");
        assert_eq!(f(f32::INFINITY), 1.0, "{name}(inf)");
        assert_eq!(f(f32::NEG_INFINITY), -1.0, "{name}(-inf)");
        assert!(f(f32::NAN).is_nan(), "{name}(NaN)");
        assert_eq!(f(f32::from_bits(1)), if name == "tanh" { f32::from_bits(1) } else { f32::from_bits(1) }, "{name}(smallest subnormal)");
        assert_eq!(f(1e30), 1.0);
        assert_eq!(f(-1e30), -1.0);
    }
}
