//! Scalar element operations: [`Num`] (arithmetic and comparisons),
//! [`Int`] (bitwise) and [`Float`] (transcendental functions).
//!
//! Semantics follow the GPU: integers wrap, integer division by zero is an
//! [`ArithError`], floats follow IEEE 754, and `f16`/`bf16` are computed in
//! `f32` and rounded once (round to nearest even), which is exact for
//! `+ - * /` and `sqrt`; so are the 8-bit floats `f8e4m3` and `f8e5m2` (their rounding
//! saturates: an infinite or too large result gives the largest finite value).

use half::{bf16, f16};

use crate::{f8e4m3, f8e5m2};

use super::elem::Elem;
use super::error::ArithError;

/// Arithmetic and comparisons on every value element type: `f16`, `bf16`,
/// `f32`, `f64`, `i32`, `u32`, `i64`, and `bool` as a 1-bit unsigned integer
/// (`false < true`; `add`/`sub` are `xor`, `mul`/`min` are `and`, `max` is
/// `or`, division by `false` is an error), so comparisons of masks work like
/// any other.
///
/// ```
/// use kernel_runtime::__private::cpu::{ArithError, Num};
/// assert_eq!(Num::add(i32::MAX, 1), i32::MIN); // wraps
/// assert_eq!(Num::div(7i32, 0), Err(ArithError::DivisionByZero));
/// assert_eq!(Num::div(1.0f32, 0.0), Ok(f32::INFINITY));
/// assert!(Num::lt(1u32, 2));
/// ```
pub trait Num: Elem + PartialOrd {
    /// `self + rhs` (wrapping for integers).
    fn add(self, rhs: Self) -> Self;
    /// `self - rhs` (wrapping for integers).
    fn sub(self, rhs: Self) -> Self;
    /// `self * rhs` (wrapping for integers).
    fn mul(self, rhs: Self) -> Self;
    /// `-self` (wrapping for integers, so `-i32::MIN == i32::MIN` and `-1u32 == u32::MAX`).
    fn neg(self) -> Self;
    /// `self / rhs`: truncating for integers (`MIN / -1` wraps), IEEE for floats.
    ///
    /// # Errors
    /// [`ArithError::DivisionByZero`] for an integer `rhs == 0`.
    fn div(self, rhs: Self) -> Result<Self, ArithError>;
    /// `self % rhs`: sign of `self` for integers, `fmod` for floats.
    ///
    /// # Errors
    /// [`ArithError::DivisionByZero`] for an integer `rhs == 0`.
    fn rem(self, rhs: Self) -> Result<Self, ArithError>;
    /// `self < rhs`.
    fn lt(self, rhs: Self) -> bool;
    /// `self <= rhs`.
    fn le(self, rhs: Self) -> bool;
    /// `self > rhs`.
    fn gt(self, rhs: Self) -> bool;
    /// `self >= rhs`.
    fn ge(self, rhs: Self) -> bool;
    /// `self == rhs` (IEEE: NaN is unequal to everything).
    fn eq(self, rhs: Self) -> bool;
    /// `self != rhs`.
    fn ne(self, rhs: Self) -> bool;
    /// The smaller value; for floats a NaN operand is ignored (like `f32::min`).
    fn min(self, rhs: Self) -> Self;
    /// The larger value; for floats a NaN operand is ignored (like `f32::max`).
    fn max(self, rhs: Self) -> Self;
    /// Zero.
    fn zero() -> Self;
    /// The smallest value (`-inf` for floats), the identity of `max`.
    fn lowest() -> Self;
    /// The largest value (`+inf` for floats), the identity of `min`.
    fn highest() -> Self;
    /// Sum of `n` elements `data[start + i * stride]`, accumulating `f16` and
    /// `bf16` in `f32` (rounded once at the end) and wrapping for integers.
    #[doc(hidden)]
    fn sum_strided(data: &[Self], start: usize, stride: usize, n: usize) -> Self;
}

/// Bitwise operations on `i32`, `u32`, `i64` and `bool`.
///
/// Shifts follow PTX: an amount at or above the bit width (or negative) shifts
/// everything out, giving 0 (or all sign bits for `shr` of a negative signed value).
///
/// ```
/// use kernel_runtime::__private::cpu::Int;
/// assert_eq!(Int::shl(1i32, 4), 16);
/// assert_eq!(Int::shl(1i32, 40), 0);
/// assert_eq!(Int::shr(-16i32, 2), -4);
/// assert_eq!(Int::shr(-16i32, 99), -1);
/// assert_eq!(Int::not(true), false);
/// ```
pub trait Int: Elem {
    /// `self & rhs`.
    fn and(self, rhs: Self) -> Self;
    /// `self | rhs`.
    fn or(self, rhs: Self) -> Self;
    /// `self ^ rhs`.
    fn xor(self, rhs: Self) -> Self;
    /// `!self` (bitwise; logical for `bool`).
    fn not(self) -> Self;
    /// `self << rhs`, clamped as described above.
    fn shl(self, rhs: Self) -> Self;
    /// `self >> rhs` (arithmetic for signed types), clamped as described above.
    fn shr(self, rhs: Self) -> Self;
    /// `|self|`, wrapping (the most negative value stays itself; unsigned values unchanged).
    fn abs(self) -> Self;
    /// The high half of the double-width product, both operands read as unsigned.
    fn umulhi(self, rhs: Self) -> Self;
    /// The value as `i64` (sign- or zero-extended; `bool` is 0 or 1).
    fn to_i64(self) -> i64;
}

/// Floating-point functions on `f16`, `bf16`, `f32` and `f64`
/// (`f16`/`bf16` computed in `f32`, rounded once).
///
/// ```
/// use kernel_runtime::__private::cpu::Float;
/// use kernel_runtime::f16;
/// assert_eq!(Float::sqrt(4.0f32), 2.0);
/// assert_eq!(Float::exp2(f16::from_f32(3.0)), f16::from_f32(8.0));
/// assert_eq!(Float::rsqrt(0.25f64), 2.0);
/// ```
pub trait Float: Num {
    /// `e^self`.
    fn exp(self) -> Self;
    /// `2^self`.
    fn exp2(self) -> Self;
    /// Natural logarithm.
    fn log(self) -> Self;
    /// Base-2 logarithm.
    fn log2(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `1 / sqrt(self)`.
    fn rsqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Rounds towards `-inf`.
    fn floor(self) -> Self;
    /// Rounds towards `+inf`.
    fn ceil(self) -> Self;
    /// Rounds to the nearest integer, halves to even.
    fn rint(self) -> Self;
    /// Rounds towards zero.
    fn trunc(self) -> Self;
    /// Rounds to the nearest integer, halves away from zero.
    fn round(self) -> Self;
    /// `e^self - 1`.
    fn expm1(self) -> Self;
    /// Base-10 logarithm.
    fn log10(self) -> Self;
    /// `ln(1 + self)`.
    fn log1p(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// `1 / (1 + e^-self)`.
    fn sigmoid(self) -> Self;
    /// `self^y`.
    fn pow(self, y: Self) -> Self;
    /// `self * b + c` rounded once (f16/bf16: the f32 result rounded to the dtype).
    fn fma(self, b: Self, c: Self) -> Self;
    /// `min(max(self, lo), hi)` with `minimum`/`maximum`'s NaN rule (a NaN `self` gives `lo`).
    fn clamp(self, lo: Self, hi: Self) -> Self;
    /// Whether the value is a NaN.
    fn isnan(self) -> bool;
    /// Whether the value is infinite.
    fn isinf(self) -> bool;
    /// The value as `f32` (rounded to nearest even for `f64`).
    fn to_f32(self) -> f32;
    /// The nearest value to `v` (rounded to nearest even).
    fn from_f32(v: f32) -> Self;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            #[inline] fn add(self, rhs: Self) -> Self { self.wrapping_add(rhs) }
            #[inline] fn sub(self, rhs: Self) -> Self { self.wrapping_sub(rhs) }
            #[inline] fn mul(self, rhs: Self) -> Self { self.wrapping_mul(rhs) }
            #[inline] fn neg(self) -> Self { self.wrapping_neg() }
            #[inline]
            fn div(self, rhs: Self) -> Result<Self, ArithError> {
                if rhs == 0 { Err(ArithError::DivisionByZero) } else { Ok(self.wrapping_div(rhs)) }
            }
            #[inline]
            fn rem(self, rhs: Self) -> Result<Self, ArithError> {
                if rhs == 0 { Err(ArithError::DivisionByZero) } else { Ok(self.wrapping_rem(rhs)) }
            }
            #[inline] fn lt(self, rhs: Self) -> bool { self < rhs }
            #[inline] fn le(self, rhs: Self) -> bool { self <= rhs }
            #[inline] fn gt(self, rhs: Self) -> bool { self > rhs }
            #[inline] fn ge(self, rhs: Self) -> bool { self >= rhs }
            #[inline] fn eq(self, rhs: Self) -> bool { self == rhs }
            #[inline] fn ne(self, rhs: Self) -> bool { self != rhs }
            #[inline] fn min(self, rhs: Self) -> Self { Ord::min(self, rhs) }
            #[inline] fn max(self, rhs: Self) -> Self { Ord::max(self, rhs) }
            #[inline] fn zero() -> Self { 0 }
            #[inline] fn lowest() -> Self { <$t>::MIN }
            #[inline] fn highest() -> Self { <$t>::MAX }
            fn sum_strided(data: &[Self], start: usize, stride: usize, n: usize) -> Self {
                (0..n).fold(0, |acc: $t, i| acc.wrapping_add(data[start + i * stride]))
            }
        }

        impl Int for $t {
            #[inline] fn and(self, rhs: Self) -> Self { self & rhs }
            #[inline] fn or(self, rhs: Self) -> Self { self | rhs }
            #[inline] fn xor(self, rhs: Self) -> Self { self ^ rhs }
            #[inline] fn not(self) -> Self { !self }
            #[inline]
            fn shl(self, rhs: Self) -> Self {
                match u32::try_from(rhs) {
                    Ok(s) if s < <$t>::BITS => self << s,
                    _ => 0,
                }
            }
            #[inline]
            fn shr(self, rhs: Self) -> Self {
                match u32::try_from(rhs) {
                    Ok(s) if s < <$t>::BITS => self >> s,
                    // Everything shifted out: sign bits for negative signed values.
                    _ => self >> (<$t>::BITS - 1) >> 1,
                }
            }
            #[inline]
            #[allow(unused_comparisons)]
            fn abs(self) -> Self {
                if self < 0 { self.wrapping_neg() } else { self }
            }
            #[inline]
            fn umulhi(self, rhs: Self) -> Self {
                let bits = <$t>::BITS;
                let (a, b) = (self as u128 & ((1u128 << bits) - 1), rhs as u128 & ((1u128 << bits) - 1));
                ((a * b) >> bits) as $t
            }
            #[inline] fn to_i64(self) -> i64 { self as i64 }
        }
    )*};
}
int_num!(i8, i16, i32, i64, u8, u16, u32);

impl Int for bool {
    #[inline]
    fn and(self, rhs: Self) -> Self {
        self & rhs
    }
    #[inline]
    fn or(self, rhs: Self) -> Self {
        self | rhs
    }
    #[inline]
    fn xor(self, rhs: Self) -> Self {
        self ^ rhs
    }
    #[inline]
    fn not(self) -> Self {
        !self
    }
    /// A 1-bit value: shifting by 1 (true) clears it.
    #[inline]
    fn shl(self, rhs: Self) -> Self {
        self & !rhs
    }
    /// A 1-bit value: shifting by 1 (true) clears it.
    #[inline]
    fn shr(self, rhs: Self) -> Self {
        self & !rhs
    }
    #[inline]
    fn abs(self) -> Self {
        self
    }
    #[inline]
    fn umulhi(self, _: Self) -> Self {
        false
    }
    #[inline]
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
}

/// `bool` as a wrapping 1-bit unsigned integer.
impl Num for bool {
    #[inline]
    fn add(self, rhs: Self) -> Self {
        self ^ rhs
    }
    #[inline]
    fn sub(self, rhs: Self) -> Self {
        self ^ rhs
    }
    #[inline]
    fn mul(self, rhs: Self) -> Self {
        self & rhs
    }
    /// `-1 == 1` modulo 2.
    #[inline]
    fn neg(self) -> Self {
        self
    }
    #[inline]
    fn div(self, rhs: Self) -> Result<Self, ArithError> {
        if rhs {
            Ok(self)
        } else {
            Err(ArithError::DivisionByZero)
        }
    }
    #[inline]
    fn rem(self, rhs: Self) -> Result<Self, ArithError> {
        if rhs {
            Ok(false)
        } else {
            Err(ArithError::DivisionByZero)
        }
    }
    #[inline]
    fn lt(self, rhs: Self) -> bool {
        !self & rhs
    }
    #[inline]
    fn le(self, rhs: Self) -> bool {
        !self | rhs
    }
    #[inline]
    fn gt(self, rhs: Self) -> bool {
        self & !rhs
    }
    #[inline]
    fn ge(self, rhs: Self) -> bool {
        self | !rhs
    }
    #[inline]
    fn eq(self, rhs: Self) -> bool {
        self == rhs
    }
    #[inline]
    fn ne(self, rhs: Self) -> bool {
        self != rhs
    }
    #[inline]
    fn min(self, rhs: Self) -> Self {
        self & rhs
    }
    #[inline]
    fn max(self, rhs: Self) -> Self {
        self | rhs
    }
    #[inline]
    fn zero() -> Self {
        false
    }
    #[inline]
    fn lowest() -> Self {
        false
    }
    #[inline]
    fn highest() -> Self {
        true
    }
    fn sum_strided(data: &[Self], start: usize, stride: usize, n: usize) -> Self {
        (0..n).fold(false, |acc, i| acc ^ data[start + i * stride])
    }
}

macro_rules! native_float {
    ($($t:ty: $m:ident),*) => {$(
        impl Num for $t {
            #[inline] fn add(self, rhs: Self) -> Self { self + rhs }
            #[inline] fn sub(self, rhs: Self) -> Self { self - rhs }
            #[inline] fn mul(self, rhs: Self) -> Self { self * rhs }
            #[inline] fn neg(self) -> Self { -self }
            #[inline] fn div(self, rhs: Self) -> Result<Self, ArithError> { Ok(self / rhs) }
            #[inline] fn rem(self, rhs: Self) -> Result<Self, ArithError> { Ok(self % rhs) }
            #[inline] fn lt(self, rhs: Self) -> bool { self < rhs }
            #[inline] fn le(self, rhs: Self) -> bool { self <= rhs }
            #[inline] fn gt(self, rhs: Self) -> bool { self > rhs }
            #[inline] fn ge(self, rhs: Self) -> bool { self >= rhs }
            #[inline] fn eq(self, rhs: Self) -> bool { self == rhs }
            #[inline] fn ne(self, rhs: Self) -> bool { self != rhs }
            #[inline] fn min(self, rhs: Self) -> Self { <$t>::min(self, rhs) }
            #[inline] fn max(self, rhs: Self) -> Self { <$t>::max(self, rhs) }
            #[inline] fn zero() -> Self { 0.0 }
            #[inline] fn lowest() -> Self { <$t>::NEG_INFINITY }
            #[inline] fn highest() -> Self { <$t>::INFINITY }
            fn sum_strided(data: &[Self], start: usize, stride: usize, n: usize) -> Self {
                (0..n).fold(0.0, |acc: $t, i| acc + data[start + i * stride])
            }
        }

        impl Float for $t {
            #[inline] fn exp(self) -> Self { $m::flush(<$t>::exp(self)) }
            #[inline] fn exp2(self) -> Self { $m::flush(<$t>::exp2(self)) }
            #[inline] fn log(self) -> Self { <$t>::ln(self) }
            #[inline] fn log2(self) -> Self { <$t>::log2(self) }
            #[inline] fn sqrt(self) -> Self { <$t>::sqrt(self) }
            #[inline] fn rsqrt(self) -> Self { 1.0 / <$t>::sqrt(self) }
            #[inline] fn abs(self) -> Self { <$t>::abs(self) }
            #[inline] fn sin(self) -> Self { <$t>::sin(self) }
            #[inline] fn cos(self) -> Self { <$t>::cos(self) }
            #[inline] fn floor(self) -> Self { <$t>::floor(self) }
            #[inline] fn ceil(self) -> Self { <$t>::ceil(self) }
            #[inline] fn rint(self) -> Self { <$t>::round_ties_even(self) }
            #[inline] fn trunc(self) -> Self { <$t>::trunc(self) }
            #[inline] fn round(self) -> Self { <$t>::round(self) }
            #[inline] fn expm1(self) -> Self { $m::expm1(self) }
            #[inline] fn log10(self) -> Self { $m::log10(self) }
            #[inline] fn log1p(self) -> Self { $m::log1p(self) }
            #[inline] fn tanh(self) -> Self { $m::tanh(self) }
            #[inline] fn erf(self) -> Self { $m::erf(self) }
            #[inline] fn sigmoid(self) -> Self { 1.0 / (1.0 + Float::exp(-self)) }
            #[inline] fn pow(self, y: Self) -> Self { $m::pow(self, y) }
            #[inline] fn fma(self, b: Self, c: Self) -> Self { <$t>::mul_add(self, b, c) }
            #[inline] fn clamp(self, lo: Self, hi: Self) -> Self { Num::min(Num::max(self, lo), hi) }
            #[inline] fn isnan(self) -> bool { <$t>::is_nan(self) }
            #[inline] fn isinf(self) -> bool { <$t>::is_infinite(self) }
            #[inline] fn to_f32(self) -> f32 { self as f32 }
            #[inline] fn from_f32(v: f32) -> Self { v as $t }
        }
    )*};
}
native_float!(f32: f32_math, f64: f64_math);

/// The functions the device code computes with the same code, under one name per dtype, so
/// that both backends give the same bits: `libm`'s `expm1`, `log10`, `log1p` and `pow` (and, in
/// f64, `tanh` and `erf`), `kernel-math`'s f32 `tanh` and `erf`.
/// `flush`: what `exp` and `exp2` give for a result below the smallest normal number: zero in
/// f32 (the device's `ex2.approx.ftz`, Triton's instruction), the result itself in f64.
mod f32_math {
    pub use libm::{expm1f as expm1, log10f as log10, log1pf as log1p, powf as pow};

    /// The host's fused multiply-add and division for `kernel-math` (the device supplies its
    /// instructions; both round once).
    struct Host;
    impl kernel_math::Arith for Host {
        #[inline]
        fn fma(a: f32, b: f32, c: f32) -> f32 {
            a.mul_add(b, c)
        }
        #[inline]
        fn div(a: f32, b: f32) -> f32 {
            a / b
        }
    }

    #[inline]
    pub fn tanh(x: f32) -> f32 {
        kernel_math::tanh::<Host>(x)
    }

    #[inline]
    pub fn erf(x: f32) -> f32 {
        kernel_math::erf::<Host>(x)
    }

    #[inline]
    pub fn flush(x: f32) -> f32 {
        if x < f32::MIN_POSITIVE { 0.0 } else { x }
    }
}
mod f64_math {
    pub use libm::{erf, expm1, log10, log1p, pow, tanh};

    #[inline]
    pub fn flush(x: f64) -> f64 {
        x
    }
}

/// `f16`, `bf16`, `f8e4m3`, `f8e5m2`: every operation on the values in f32, the result rounded
/// once (`from_f32`: nearest even; saturating for the 8-bit floats), as on the GPU; `neg` flips
/// the sign bit (`$sign`). Only conversions of the types are used (not the `float8` crate's
/// comparisons or constants).
macro_rules! narrow_float {
    ($($t:ty: $sign:literal),*) => {$(
        impl Num for $t {
            #[inline] fn add(self, rhs: Self) -> Self { <$t>::from_f32(f32::from(self) + f32::from(rhs)) }
            #[inline] fn sub(self, rhs: Self) -> Self { <$t>::from_f32(f32::from(self) - f32::from(rhs)) }
            #[inline] fn mul(self, rhs: Self) -> Self { <$t>::from_f32(f32::from(self) * f32::from(rhs)) }
            #[inline] fn neg(self) -> Self { <$t>::from_bits(self.to_bits() ^ $sign) }
            #[inline]
            fn div(self, rhs: Self) -> Result<Self, ArithError> {
                Ok(<$t>::from_f32(f32::from(self) / f32::from(rhs)))
            }
            #[inline]
            fn rem(self, rhs: Self) -> Result<Self, ArithError> {
                Ok(<$t>::from_f32(f32::from(self) % f32::from(rhs)))
            }
            #[inline] fn lt(self, rhs: Self) -> bool { f32::from(self) < f32::from(rhs) }
            #[inline] fn le(self, rhs: Self) -> bool { f32::from(self) <= f32::from(rhs) }
            #[inline] fn gt(self, rhs: Self) -> bool { f32::from(self) > f32::from(rhs) }
            #[inline] fn ge(self, rhs: Self) -> bool { f32::from(self) >= f32::from(rhs) }
            #[inline] fn eq(self, rhs: Self) -> bool { f32::from(self) == f32::from(rhs) }
            #[inline] fn ne(self, rhs: Self) -> bool { f32::from(self) != f32::from(rhs) }
            #[inline] fn min(self, rhs: Self) -> Self { <$t>::from_f32(f32::from(self).min(f32::from(rhs))) }
            #[inline] fn max(self, rhs: Self) -> Self { <$t>::from_f32(f32::from(self).max(f32::from(rhs))) }
            #[inline] fn zero() -> Self { <$t>::from_f32(0.0) }
            #[inline] fn lowest() -> Self { <$t>::from_f32(f32::NEG_INFINITY) }
            #[inline] fn highest() -> Self { <$t>::from_f32(f32::INFINITY) }
            fn sum_strided(data: &[Self], start: usize, stride: usize, n: usize) -> Self {
                <$t>::from_f32((0..n).fold(0.0f32, |acc, i| acc + f32::from(data[start + i * stride])))
            }
        }

        impl Float for $t {
            #[inline] fn exp(self) -> Self { <$t>::from_f32(f32_math::flush(f32::from(self).exp())) }
            #[inline] fn exp2(self) -> Self { <$t>::from_f32(f32_math::flush(f32::from(self).exp2())) }
            #[inline] fn log(self) -> Self { <$t>::from_f32(f32::from(self).ln()) }
            #[inline] fn log2(self) -> Self { <$t>::from_f32(f32::from(self).log2()) }
            #[inline] fn sqrt(self) -> Self { <$t>::from_f32(f32::from(self).sqrt()) }
            #[inline] fn rsqrt(self) -> Self { <$t>::from_f32(1.0 / f32::from(self).sqrt()) }
            #[inline] fn abs(self) -> Self { <$t>::from_f32(f32::from(self).abs()) }
            #[inline] fn sin(self) -> Self { <$t>::from_f32(f32::from(self).sin()) }
            #[inline] fn cos(self) -> Self { <$t>::from_f32(f32::from(self).cos()) }
            #[inline] fn floor(self) -> Self { <$t>::from_f32(f32::from(self).floor()) }
            #[inline] fn ceil(self) -> Self { <$t>::from_f32(f32::from(self).ceil()) }
            #[inline] fn rint(self) -> Self { <$t>::from_f32(f32::from(self).round_ties_even()) }
            #[inline] fn trunc(self) -> Self { <$t>::from_f32(f32::from(self).trunc()) }
            #[inline] fn round(self) -> Self { <$t>::from_f32(f32::from(self).round()) }
            #[inline] fn expm1(self) -> Self { <$t>::from_f32(f32_math::expm1(f32::from(self))) }
            #[inline] fn log10(self) -> Self { <$t>::from_f32(f32_math::log10(f32::from(self))) }
            #[inline] fn log1p(self) -> Self { <$t>::from_f32(f32_math::log1p(f32::from(self))) }
            #[inline] fn tanh(self) -> Self { <$t>::from_f32(f32_math::tanh(f32::from(self))) }
            #[inline] fn erf(self) -> Self { <$t>::from_f32(f32_math::erf(f32::from(self))) }
            #[inline] fn sigmoid(self) -> Self { <$t>::from_f32(Float::sigmoid(f32::from(self))) }
            #[inline] fn pow(self, y: Self) -> Self { <$t>::from_f32(f32_math::pow(f32::from(self), f32::from(y))) }
            #[inline] fn fma(self, b: Self, c: Self) -> Self { <$t>::from_f32(f32::from(self).mul_add(f32::from(b), f32::from(c))) }
            #[inline] fn clamp(self, lo: Self, hi: Self) -> Self { Num::min(Num::max(self, lo), hi) }
            #[inline] fn isnan(self) -> bool { f32::from(self).is_nan() }
            #[inline] fn isinf(self) -> bool { f32::from(self).is_infinite() }
            #[inline] fn to_f32(self) -> f32 { f32::from(self) }
            #[inline] fn from_f32(v: f32) -> Self { <$t>::from_f32(v) }
        }
    )*};
}
narrow_float!(f16: 0x8000, bf16: 0x8000, f8e4m3: 0x80, f8e5m2: 0x80);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_wrap() {
        assert_eq!(Num::add(i32::MAX, 1), i32::MIN);
        assert_eq!(Num::sub(0u32, 1), u32::MAX);
        assert_eq!(Num::mul(i64::MAX, 2), -2);
        assert_eq!(Num::neg(i32::MIN), i32::MIN);
        assert_eq!(Num::neg(1u32), u32::MAX);
        assert_eq!(Num::div(i32::MIN, -1), Ok(i32::MIN));
        assert_eq!(Num::rem(i32::MIN, -1), Ok(0));
        assert_eq!(Num::div(-7i32, 2), Ok(-3));
        assert_eq!(Num::rem(-7i32, 2), Ok(-1));
    }

    #[test]
    fn integer_division_by_zero_is_an_error() {
        assert_eq!(Num::div(1i32, 0), Err(ArithError::DivisionByZero));
        assert_eq!(Num::rem(1u32, 0), Err(ArithError::DivisionByZero));
        assert_eq!(Num::div(1i64, 0), Err(ArithError::DivisionByZero));
        assert!(Num::div(0.0f64, 0.0).unwrap().is_nan());
        assert_eq!(Num::div(f16::ONE, f16::ZERO), Ok(f16::INFINITY));
    }

    #[test]
    fn half_rounds_once() {
        // 1 + 2^-11 is exactly halfway between two f16 values: ties to even.
        let a = f16::ONE;
        let b = f16::from_f32(2f32.powi(-11));
        assert_eq!(Num::add(a, b), f16::ONE);
        let c = f16::from_f32(3.0 * 2f32.powi(-11));
        assert_eq!(Num::add(a, c), f16::from_f32(1.0 + 2f32.powi(-9)));
        assert_eq!(Num::mul(bf16::from_f32(3.0), bf16::from_f32(0.5)), bf16::from_f32(1.5));
        assert_eq!(Float::abs(f16::from_f32(-2.5)), f16::from_f32(2.5));
        assert_eq!(Float::abs(bf16::from_f32(-0.0)).to_bits(), 0);
    }

    #[test]
    fn comparisons_and_minmax() {
        assert!(Num::le(2i32, 2) && !Num::lt(2i32, 2) && Num::ge(3i32, 2) && Num::gt(3i32, 2));
        assert!(!Num::eq(f32::NAN, f32::NAN) && Num::ne(f32::NAN, f32::NAN));
        assert_eq!(Num::max(f32::NAN, 1.0), 1.0);
        assert_eq!(Num::min(bf16::from_f32(-1.0), bf16::from_f32(2.0)), bf16::from_f32(-1.0));
        assert_eq!(Num::min(5u32, 3), 3);
        assert_eq!(<i32 as Num>::lowest(), i32::MIN);
        assert_eq!(<f16 as Num>::highest(), f16::INFINITY);
    }

    #[test]
    fn bool_is_a_one_bit_integer() {
        assert!(Num::lt(false, true) && !Num::lt(true, true) && Num::le(true, true));
        assert!(Num::gt(true, false) && Num::ge(false, false) && !Num::ge(false, true));
        assert!(Num::eq(true, true) && Num::ne(true, false));
        assert!(!Num::add(true, true) && Num::sub(false, true) && !Num::mul(true, false));
        assert_eq!(Num::div(true, false), Err(ArithError::DivisionByZero));
        assert_eq!(Num::rem(true, true), Ok(false));
        assert!(Num::max(false, true) && !Num::min(false, true) && Num::neg(true));
        assert!(<bool as Num>::sum_strided(&[true, true, true], 0, 1, 3));
    }

    #[test]
    fn shifts_clamp_like_ptx() {
        assert_eq!(Int::shl(3u32, 1), 6);
        assert_eq!(Int::shl(3u32, 32), 0);
        assert_eq!(Int::shl(3i32, -1), 0);
        assert_eq!(Int::shr(u32::MAX, 31), 1);
        assert_eq!(Int::shr(u32::MAX, 32), 0);
        assert_eq!(Int::shr(-1i64, 64), -1);
        assert_eq!(Int::shr(5i64, 64), 0);
        assert_eq!(Int::xor(0b1100u32, 0b1010), 0b0110);
        assert_eq!(Int::not(0i32), -1);
        assert!(Int::shl(true, false) && !Int::shl(true, true));
        assert_eq!(Int::to_i64(u32::MAX), 4_294_967_295);
        assert_eq!(Int::to_i64(true), 1);
    }

    #[test]
    fn float_functions() {
        assert!((Float::exp(1.0f64) - std::f64::consts::E).abs() < 1e-15);
        assert_eq!(Float::log2(8.0f32), 3.0);
        assert_eq!(Float::floor(bf16::from_f32(-1.5)), bf16::from_f32(-2.0));
        assert_eq!(Float::ceil(f16::from_f32(1.25)), f16::from_f32(2.0));
        assert_eq!(Float::rsqrt(f16::from_f32(4.0)), f16::from_f32(0.5));
        assert_eq!(<f16 as Num>::sum_strided(&[f16::ONE; 4], 1, 1, 3), f16::from_f32(3.0));
    }
}
