//! Conversions between element types: [`cast`] and [`cast_scalar`].
//!
//! Rust `as` semantics between integers (wrapping) and from float to integer
//! (truncate toward zero, saturate, NaN -> 0); round to nearest even for
//! float narrowing and integer -> float (rounded exactly once, also to
//! `f16`/`bf16`); `bool` -> 1 / 0; anything -> `bool` is `!= 0`.

use half::{bf16, f16};

use crate::{f8e4m3, f8e5m2};

use super::blk::Blk;
use super::elem::Elem;
use crate::convert;

pub(crate) mod sealed {
    /// The value of any castable element, wide enough to hold each exactly.
    #[derive(Clone, Copy, Debug)]
    pub enum Value {
        Bool(bool),
        Int(i64),
        Float(f64),
    }

    /// The conversion machinery behind [`Cast`](super::Cast).
    pub trait CastImpl: Copy {
        fn to_value(self) -> Value;
        fn from_value(v: Value) -> Self;
    }
}

use sealed::Value;

/// An element type that [`cast`] converts from and to: every element type
/// except the pointer [`P`](super::P). Sealed.
///
/// ```
/// use kernel_runtime::__private::cpu::{cast_scalar, Cast};
/// fn to_i32<T: Cast>(v: T) -> i32 { cast_scalar::<T, i32>(v) }
/// assert_eq!(to_i32(2.9f32), 2);
/// ```
pub trait Cast: Elem + sealed::CastImpl {}

macro_rules! cast_int {
    ($($t:ty),*) => {$(
        impl sealed::CastImpl for $t {
            #[inline]
            fn to_value(self) -> Value {
                Value::Int(self as i64)
            }
            #[inline]
            fn from_value(v: Value) -> Self {
                match v {
                    Value::Bool(b) => b as $t,
                    Value::Int(i) => i as $t,
                    Value::Float(f) => f as $t,
                }
            }
        }
        impl Cast for $t {}
    )*};
}
cast_int!(i8, i16, i32, i64, u8, u16, u32);

impl sealed::CastImpl for bool {
    #[inline]
    fn to_value(self) -> Value {
        Value::Bool(self)
    }
    #[inline]
    fn from_value(v: Value) -> Self {
        match v {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
        }
    }
}
impl Cast for bool {}

macro_rules! cast_float {
    ($t:ty, $from_f64:expr, $from_i64:expr) => {
        impl sealed::CastImpl for $t {
            #[inline]
            fn to_value(self) -> Value {
                Value::Float(f64::from(self))
            }
            #[inline]
            fn from_value(v: Value) -> Self {
                match v {
                    Value::Bool(b) => $from_f64(f64::from(u8::from(b))),
                    Value::Int(i) => $from_i64(i),
                    Value::Float(f) => $from_f64(f),
                }
            }
        }
        impl Cast for $t {}
    };
}
cast_float!(f16, convert::f64_to_f16, convert::i64_to_f16);
cast_float!(bf16, convert::f64_to_bf16, convert::i64_to_bf16);
// One rounding from f64 (exact from every integer an fp8 can tell apart: beyond 2^53 they saturate).
cast_float!(f8e4m3, f8e4m3::from_f64, |i: i64| f8e4m3::from_f64(i as f64));
cast_float!(f8e5m2, f8e5m2::from_f64, |i: i64| f8e5m2::from_f64(i as f64));
cast_float!(f32, |f: f64| f as f32, |i: i64| i as f32);
cast_float!(f64, |f: f64| f, |i: i64| i as f64);

/// Converts one element: Rust `as` semantics between integers (wrapping) and
/// from float to integer (truncate toward zero, saturate, NaN -> 0); round to
/// nearest even for float narrowing and integer -> float (rounded exactly
/// once, also to `f16`/`bf16`); `bool` -> 1 / 0; anything -> `bool` is `!= 0`.
///
/// ```
/// use kernel_runtime::__private::cpu::cast_scalar;
/// use kernel_runtime::f16;
/// assert_eq!(cast_scalar::<f32, i32>(-1.9), -1);
/// assert_eq!(cast_scalar::<f32, u32>(-1.0), 0);        // saturates
/// assert_eq!(cast_scalar::<f32, i32>(f32::NAN), 0);
/// assert_eq!(cast_scalar::<i32, u32>(-1), u32::MAX);   // wraps
/// assert_eq!(cast_scalar::<f32, f16>(65519.0), f16::MAX);
/// assert_eq!(cast_scalar::<f32, bool>(0.5), true);
/// assert_eq!(cast_scalar::<bool, f32>(true), 1.0);
/// ```
#[inline]
pub fn cast_scalar<A: Cast, B: Cast>(v: A) -> B {
    B::from_value(v.to_value())
}

/// Converts every element of a block with [`cast_scalar`].
///
/// ```
/// use kernel_runtime::__private::cpu::{cast, Blk};
/// use kernel_runtime::f16;
/// let acc = Blk::from_vec(vec![2], vec![1.0f32, 0.1]);
/// let c = cast::<f32, f16>(&acc);
/// assert_eq!(c.data(), &[f16::ONE, f16::from_f32(0.1)]);
/// ```
pub fn cast<A: Cast, B: Cast>(b: &Blk<A>) -> Blk<B> {
    Blk { shape: b.shape.clone(), data: b.data.iter().map(|&v| cast_scalar(v)).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_narrowing_rounds_to_nearest_even() {
        // f32 values between two f16 neighbours of 1.0 (spacing 2^-10).
        let tie = 1.0 + 2f32.powi(-11);
        assert_eq!(cast_scalar::<f32, f16>(tie), f16::ONE);
        assert_eq!(cast_scalar::<f32, f16>(tie + 2f32.powi(-20)), f16::from_f32(1.0 + 2f32.powi(-10)));
        assert_eq!(cast_scalar::<f32, f16>(1.0 + 3.0 * 2f32.powi(-11)), f16::from_f32(1.0 + 2f32.powi(-9)));
        assert_eq!(cast_scalar::<f32, f16>(1e6), f16::INFINITY);
        assert_eq!(cast_scalar::<f32, f16>(-1e6), f16::NEG_INFINITY);
        assert!(cast_scalar::<f32, f16>(f32::NAN).is_nan());
        assert_eq!(cast_scalar::<f64, f32>(0.1), 0.1f32);
        // f64 just above an f16 tie must round up (no double rounding through f32).
        assert_eq!(
            cast_scalar::<f64, f16>(1.0 + 2f64.powi(-11) + 2f64.powi(-40)),
            f16::from_f32(1.0 + 2f32.powi(-10))
        );
        assert_eq!(cast_scalar::<f16, bf16>(f16::from_f32(1.0 + 2f32.powi(-8))), bf16::ONE);
        assert_eq!(cast_scalar::<bf16, f16>(bf16::from_f32(3.0)), f16::from_f32(3.0));
    }

    #[test]
    fn float_to_int_truncates_saturates_and_maps_nan_to_zero() {
        assert_eq!(cast_scalar::<f32, i32>(2.7), 2);
        assert_eq!(cast_scalar::<f32, i32>(-2.7), -2);
        assert_eq!(cast_scalar::<f32, i32>(3e9), i32::MAX);
        assert_eq!(cast_scalar::<f32, i32>(-3e9), i32::MIN);
        assert_eq!(cast_scalar::<f64, u32>(-5.0), 0);
        assert_eq!(cast_scalar::<f64, u32>(f64::INFINITY), u32::MAX);
        assert_eq!(cast_scalar::<f16, i64>(f16::NAN), 0);
        assert_eq!(cast_scalar::<bf16, i32>(bf16::NEG_INFINITY), i32::MIN);
        assert_eq!(cast_scalar::<f32, i64>(f32::NAN), 0);
    }

    #[test]
    fn int_to_int_wraps() {
        assert_eq!(cast_scalar::<i64, i32>(1 << 32 | 5), 5);
        assert_eq!(cast_scalar::<i64, i32>(-1), -1);
        assert_eq!(cast_scalar::<u32, i32>(u32::MAX), -1);
        assert_eq!(cast_scalar::<i32, i64>(-1), -1);
        assert_eq!(cast_scalar::<u32, i64>(u32::MAX), 4_294_967_295);
        assert_eq!(cast_scalar::<i32, u32>(i32::MIN), 1 << 31);
    }

    #[test]
    fn int_to_float_rounds_once() {
        assert_eq!(cast_scalar::<i32, f16>(2049), f16::from_f32(2048.0));
        assert_eq!(cast_scalar::<i32, f16>(2051), f16::from_f32(2052.0));
        assert_eq!(cast_scalar::<i32, f16>(70000), f16::INFINITY);
        assert_eq!(cast_scalar::<i64, f32>((1 << 24) + 1), 16_777_216.0);
        assert_eq!(cast_scalar::<i32, f32>(16_777_219), 16_777_220.0);
        assert_eq!(cast_scalar::<u32, f64>(u32::MAX), 4_294_967_295.0);
        assert_eq!(cast_scalar::<i32, bf16>(257), bf16::from_f32(256.0));
    }

    #[test]
    fn bool_conversions() {
        assert_eq!(cast_scalar::<bool, i32>(true), 1);
        assert_eq!(cast_scalar::<bool, f16>(true), f16::ONE);
        assert_eq!(cast_scalar::<bool, u32>(false), 0);
        assert!(cast_scalar::<i32, bool>(-3));
        assert!(!cast_scalar::<f32, bool>(-0.0));
        assert!(cast_scalar::<f32, bool>(f32::NAN));
        assert!(!cast_scalar::<u32, bool>(0));
        let b = cast::<i32, bool>(&Blk::from_vec(vec![3], vec![0, 2, 0]));
        assert_eq!(b.data(), &[false, true, false]);
    }
}
