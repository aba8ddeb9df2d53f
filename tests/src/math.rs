//! Kernels for the math functions beyond `exp`/`log`/`sqrt`: every function on f32, f64 and
//! f16 blocks, and the integer ones, written to `out[f * n + i]` for function `f`.

use kernel_std::prelude::*;

/// f32: expm1, log10, log1p, tanh, erf, sigmoid, pow(x, y), fma(x, y, z), clamp(x, -0.5, 0.75),
/// sqrt_rn, div_rn(x, y) into `out`; isnan and isinf (as 0/1) into `flags[i]` and `flags[n + i]`.
#[kernel(B = [64])]
pub fn math_f32<const B: i32>(x: Ptr<f32>, y: Ptr<f32>, z: Ptr<f32>, out: Ptr<f32>, flags: Ptr<i32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 1.0);
    let w = load(y + i, m, 1.0);
    let u = load(z + i, m, 1.0);
    store(out + i, expm1(v), m);
    store(out + n + i, log10(v), m);
    store(out + 2 * n + i, v.log1p(), m);
    store(out + 3 * n + i, tanh(v), m);
    store(out + 4 * n + i, erf(v), m);
    store(out + 5 * n + i, sigmoid(v), m);
    store(out + 6 * n + i, pow(v, w), m);
    store(out + 7 * n + i, v.fma(w, u), m);
    store(out + 8 * n + i, clamp(v, -0.5, 0.75), m);
    store(out + 9 * n + i, sqrt_rn(v), m);
    store(out + 10 * n + i, div_rn(v, w), m);
    store(flags + i, isnan(v).to::<i32>(), m);
    store(flags + n + i, v.isinf().to::<i32>(), m);
}

/// The same functions on f64 blocks (computed in f64 on both backends).
#[kernel(B = [64])]
pub fn math_f64_more<const B: i32>(x: Ptr<f64>, y: Ptr<f64>, z: Ptr<f64>, out: Ptr<f64>, flags: Ptr<i32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 1.0);
    let w = load(y + i, m, 1.0);
    let u = load(z + i, m, 1.0);
    store(out + i, expm1(v), m);
    store(out + n + i, log10(v), m);
    store(out + 2 * n + i, v.log1p(), m);
    store(out + 3 * n + i, tanh(v), m);
    store(out + 4 * n + i, erf(v), m);
    store(out + 5 * n + i, sigmoid(v), m);
    store(out + 6 * n + i, pow(v, w), m);
    store(out + 7 * n + i, v.fma(w, u), m);
    store(out + 8 * n + i, clamp(v, -0.5, 0.75), m);
    store(out + 9 * n + i, sqrt_rn(v), m);
    store(out + 10 * n + i, div_rn(v, w), m);
    store(flags + i, isnan(v).to::<i32>(), m);
    store(flags + n + i, v.isinf().to::<i32>(), m);
}

/// f16: tanh, erf, sigmoid, pow(x, 2.5), fma(x, x, 1) (computed in f32, rounded once).
#[kernel(B = [64])]
pub fn math_f16<const B: i32>(x: Ptr<f16>, out: Ptr<f16>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 1.0);
    store(out + i, tanh(v), m);
    store(out + n + i, erf(v), m);
    store(out + 2 * n + i, sigmoid(v), m);
    store(out + 3 * n + i, pow(abs(v), 2.5), m);
    store(out + 4 * n + i, fma(v, v, 1.0), m);
}

/// Integer `abs` (i32, i64) and `umulhi` (i32, u32, i64; operands read as unsigned).
#[kernel(B = [32])]
pub fn int_math<const B: i32>(a: Ptr<i32>, b: Ptr<i32>, c: Ptr<i64>, d: Ptr<i64>, e: Ptr<u32>, f: Ptr<u32>, out32: Ptr<i32>, out64: Ptr<i64>, outu: Ptr<u32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let x = load(a + i, m, 0);
    let y = load(b + i, m, 0);
    let p = load(c + i, m, 0);
    let q = load(d + i, m, 0);
    store(out32 + i, abs(x), m);
    store(out32 + n + i, umulhi(x, y), m);
    store(out64 + i, p.abs(), m);
    store(out64 + n + i, umulhi(p, q), m);
    store(outu + i, umulhi(load(e + i, m, 0), load(f + i, m, 0)), m);
}

/// `f32::NEG_INFINITY` as `other` of an f16 load and `f64::INFINITY` in an f16 `full`: the
/// constants take the block's dtype like a weak literal. Writes the max and the min of the
/// first `n` elements.
#[kernel(B = [64])]
pub fn masked_extrema_f16<const B: i32>(x: Ptr<f16>, out: Ptr<f16>, n: i32) {
    let i = arange(0, B);
    let v = load(x + i, i < n, f32::NEG_INFINITY);
    let hi = full([B], f64::INFINITY);
    store(out, v.max(0));
    store(out + 1, where_(i < n, v, hi).min(0));
}

/// `rint`, `trunc` and `round` of f32, f64 and f16 blocks (three results per input each).
#[kernel(B = [64])]
pub fn roundings<const B: i32>(x: Ptr<f32>, xd: Ptr<f64>, xh: Ptr<f16>, out: Ptr<f32>, outd: Ptr<f64>, outh: Ptr<f16>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 0.0);
    store(out + i, rint(v), m);
    store(out + n + i, v.trunc(), m);
    store(out + 2 * n + i, round(v), m);
    let w = load(xd + i, m, 0.0);
    store(outd + i, w.rint(), m);
    store(outd + n + i, trunc(w), m);
    store(outd + 2 * n + i, w.round(), m);
    let h = load(xh + i, m, 0.0);
    store(outh + i, rint(h), m);
    store(outh + n + i, trunc(h), m);
    store(outh + 2 * n + i, round(h), m);
}

/// `x / y` elementwise (f32): IEEE division, the same bits on both backends.
#[kernel(B = [256])]
pub fn divide_f32<const B: i32>(x: Ptr<f32>, y: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    store(out + i, load(x + i, m, 1.0) / load(y + i, m, 1.0), m);
}

/// `x / s` for one divisor `s` (the GPU computes its reciprocal once per thread) and `s / x`.
#[kernel(B = [256])]
pub fn divide_by_scalar<const B: i32>(x: Ptr<f32>, s: f32, out: Ptr<f32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let v = load(x + i, m, 1.0);
    store(out + i, v / s, m);
    store(out + n + i, s / v, m);
}

/// `x * y + z`, `z - x * y` and `x * y - z` as written: contracted into one `fma` each (the
/// default, as Triton does), on both backends.
#[kernel(B = [64])]
pub fn mul_add_contracted<const B: i32>(x: Ptr<f32>, y: Ptr<f32>, z: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let (a, b, c) = (load(x + i, m, 0.0), load(y + i, m, 0.0), load(z + i, m, 0.0));
    store(out + i, a * b + c, m);
    store(out + n + i, c - a * b, m);
    store(out + 2 * n + i, a * b - c, m);
}

/// [`mul_add_contracted`] with `fp_fusion = false`: each product rounded on its own.
#[kernel(B = [64], fp_fusion = false)]
pub fn mul_add_rounded<const B: i32>(x: Ptr<f32>, y: Ptr<f32>, z: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let i = program_id(0) * B + arange(0, B);
    let m = i < n;
    let (a, b, c) = (load(x + i, m, 0.0), load(y + i, m, 0.0), load(z + i, m, 0.0));
    store(out + i, a * b + c, m);
    store(out + n + i, c - a * b, m);
    store(out + 2 * n + i, a * b - c, m);
}
