//! # kernel-math
//!
//! Float functions of the `#[kernel]` block language computed by the same Rust code on both
//! backends — the CPU backend (`kernel-runtime`) and the device code (`kernel-std`, compiled to
//! PTX) — so that a kernel gives the same bits on either.
//!
//! [`erf`] and [`tanh`] in f32: a polynomial near zero, one exponential and a polynomial (or a
//! quotient) beyond it, both evaluated and one selected: no branch, so that the code of
//! neighbouring elements interleaves (a branch per element makes each element's chain of
//! multiply-adds wait for the previous element's). No tables and no calls, so that a block of
//! them is short code per element (the GELU epilogue of a matmul evaluates one per accumulator
//! element). Over every f32 input they are within 2 units in the last place of the exact value
//! (tests: every input against `libm`'s f64 functions).
//!
//! Each function is generic over the backend's [`Arith`]: its fused multiply-add and its
//! division, both rounded once to nearest (IEEE 754), hence the same operations on the host and
//! the GPU. Every other step is an f32 addition, subtraction or multiplication, which both
//! backends round the same way; none of them is contracted into a multiply-add by either
//! compiler (neither is asked to).
//!
//! The polynomials' coefficients were fitted for this crate (weighted least squares iterated
//! toward the minimax error, on Chebyshev points, against 40-digit values).
#![no_std]

/// The two operations whose instructions differ between the backends, each rounded once.
pub trait Arith {
    /// `a * b + c` rounded once.
    fn fma(a: f32, b: f32, c: f32) -> f32;
    /// `a / b` rounded once (IEEE 754 division). Called only with `a` and `b` in [0.5, 2], so
    /// an implementation may use a sequence that is correctly rounded only for such operands.
    fn div(a: f32, b: f32) -> f32;
}

/// `c[0] + x * (c[1] + x * (c[2] + ...))` by fused multiply-adds.
#[inline(always)]
fn horner<A: Arith, const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let mut acc = c[N - 1];
    let mut i = N - 1;
    while i > 0 {
        i -= 1;
        acc = A::fma(acc, x, c[i]);
    }
    acc
}

#[inline(always)]
fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// `magnitude` with the sign of `sign`.
#[inline(always)]
fn with_sign_of(magnitude: f32, sign: f32) -> f32 {
    f32::from_bits((magnitude.to_bits() & 0x7fff_ffff) | (sign.to_bits() & 0x8000_0000))
}

/// `e^r = 1 + r + r^2 Q(r)` on `[-ln 2 / 2, ln 2 / 2]`, relative error 3e-9.
const EXP: [f32; 7] = [1.0, 1.0, 0.499_999_94, 0.166_665_21, 0.041_668_39, 0.008_368_71, 0.001_381_461_2];

/// `e^v` for `v` in `[-40, 0]` (a normal result): `v = n ln 2 + r` with `n` an integer
/// (Cody and Waite's two-part `ln 2`, the high part exact times any `n` here), then
/// `2^n e^r`.
#[inline(always)]
fn exp_neg<A: Arith>(v: f32) -> f32 {
    // Adding 1.5 * 2^23 rounds to an integer (ties to even); subtracting it gives that integer.
    const SHIFT: f32 = 12_582_912.0;
    const LN2_HI: f32 = 0.693_359_375;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let shifted = A::fma(v, core::f32::consts::LOG2_E, SHIFT);
    let n = shifted - SHIFT;
    let r = A::fma(n, -LN2_HI, v);
    let r = A::fma(n, -LN2_LO, r);
    // `shifted`'s bits are SHIFT's plus `n` (its unit in the last place is 1), so 2^n's exponent
    // field comes from integer arithmetic on them: no float-to-integer conversion.
    let two_n = (shifted.to_bits().wrapping_sub(SHIFT.to_bits()).wrapping_add(127)) << 23;
    horner::<A, 7>(r, &EXP) * f32::from_bits(two_n)
}

/// `tanh(x) = x + x^3 P(x^2)` for `|x| < 0.5625`, relative error 1.3e-9.
const TANH_P: [f32; 5] = [-0.333_333_13, 0.133_324_52, -0.053_837_433, 0.021_007_465, -0.006_179_818];

/// The hyperbolic tangent, within 2 units in the last place; `tanh(±0) = ±0`, `tanh(±∞) = ±1`,
/// NaN for NaN.
#[inline(always)]
pub fn tanh<A: Arith>(x: f32) -> f32 {
    let a = abs(x);
    let x2 = x * x;
    let small = with_sign_of(A::fma(x * x2, horner::<A, 5>(x2, &TANH_P), x), x);
    // (1 - e^-2a) / (1 + e^-2a); from |x| = 9.1 it rounds to 1 (so |x| is clamped at 10).
    let t = exp_neg::<A>(-2.0 * if a < 10.0 { a } else { 10.0 });
    let large = with_sign_of(A::div(1.0 - t, 1.0 + t), x);
    if a >= 0.5625 { large } else { small }
}

/// `erf(x) = x + x P(x^2)` for `|x| < 0.875`, relative error 2e-10 (`P(0) = 2/√π - 1`: the
/// final multiply-add adds `x` exactly once).
const ERF_P: [f32; 7] = [0.128_379_17, -0.376_126_35, 0.112_837_33, -0.026_861_586, 0.005_206_75, -8.211_129_5e-4, 8.675_493e-5];
/// `ln(erfc(x)) + x^2 = Q(x - 2.3975)` for `0.875 <= x <= 3.92`, error 5e-11 relative to `erf(x)`.
const ERF_Q: [f32; 9] = [
    -1.520_064_1, -0.364_534_32, 0.059_588_525, -0.011_784_991, 0.002_398_119_5, -4.814_397_3e-4, 6.719_030_4e-5,
    -2.701_510_3e-5, -1.025_870_3e-6,
];
const ERF_Q_AT: f32 = 2.3975;

/// The error function, within 2 units in the last place; `erf(±0) = ±0`, `erf(±∞) = ±1`, NaN
/// for NaN.
#[inline(always)]
pub fn erf<A: Arith>(x: f32) -> f32 {
    let a = abs(x);
    // 1 - erfc(|x|), erfc = e^(Q - x^2); from |x| = 3.92 erf rounds to 1 (so |x| is clamped there).
    let c = if a < 3.92 { a } else { 3.92 };
    let erfc = exp_neg::<A>(A::fma(-c, c, horner::<A, 9>(c - ERF_Q_AT, &ERF_Q)));
    let large = with_sign_of(1.0 - erfc, x);
    let small = A::fma(x, horner::<A, 7>(x * x, &ERF_P), x);
    if a >= 0.875 { large } else { small }
}
