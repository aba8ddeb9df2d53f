//! Correctly rounded conversions to the narrow float types.
//!
//! `half`'s `from_f64` rounds twice (f64 -> f32 -> f16), which can round a
//! value just above a tie the wrong way. These helpers first round to an
//! intermediate format with *round-to-odd* (which keeps a sticky bit), so the
//! final round-to-nearest-even step gives the correctly rounded result.

use half::{bf16, f16};

/// Rounds `x` to f32 with round-to-odd (truncate, then set the last bit if inexact).
pub(crate) fn f64_to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if !r.is_finite() || f64::from(r) == x {
        // Exact, NaN, or out of f32 range (then the narrow result overflows to
        // infinity whichever way f32 rounded).
        return r;
    }
    let mut bits = r.to_bits();
    if f64::from(r).abs() > x.abs() {
        // Rounded away from zero: step back one ulp towards zero
        // (sign-magnitude encoding, so decrementing the bits shrinks |r|).
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// Rounds `x` to f64 with round-to-odd.
pub(crate) fn i64_to_f64_odd(x: i64) -> f64 {
    let r = x as f64;
    // `r as i128` is exact: |r| <= 2^63.
    if r as i128 == i128::from(x) {
        return r;
    }
    let mut bits = r.to_bits();
    if (r as i128).abs() > i128::from(x).abs() {
        bits -= 1;
    }
    f64::from_bits(bits | 1)
}

/// f64 -> f16, round to nearest even, exactly once.
pub(crate) fn f64_to_f16(x: f64) -> f16 {
    f16::from_f32(f64_to_f32_odd(x))
}

/// f64 -> bf16, round to nearest even, exactly once.
pub(crate) fn f64_to_bf16(x: f64) -> bf16 {
    bf16::from_f32(f64_to_f32_odd(x))
}

/// i64 -> f16, round to nearest even, exactly once.
pub(crate) fn i64_to_f16(x: i64) -> f16 {
    f64_to_f16(i64_to_f64_odd(x))
}

/// i64 -> bf16, round to nearest even, exactly once.
pub(crate) fn i64_to_bf16(x: i64) -> bf16 {
    f64_to_bf16(i64_to_f64_odd(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_to_f16_rounds_once() {
        // Just above the tie between 1 and 1 + 2^-10: must round up.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f64_to_f16(x), f16::from_f32(1.0 + 2f32.powi(-10)));
        // Exactly the tie: round to even (1.0).
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)), f16::ONE);
        // Just below the tie: round down.
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11) - 2f64.powi(-40)), f16::ONE);
        assert_eq!(f64_to_f16(-(1.0 + 2f64.powi(-11) + 2f64.powi(-40))), -f16::from_f32(1.0 + 2f32.powi(-10)));
        assert!(f64_to_f16(f64::NAN).is_nan());
        assert_eq!(f64_to_f16(1e10), f16::INFINITY);
        assert_eq!(f64_to_f16(65519.0), f16::MAX);
        assert_eq!(f64_to_f16(65520.0), f16::INFINITY);
        assert_eq!(f64_to_f16(1e-300), f16::ZERO);
    }

    #[test]
    fn f64_to_bf16_rounds_once() {
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(f64_to_bf16(x), bf16::from_f32(1.0 + 2f32.powi(-7)));
        assert_eq!(f64_to_bf16(1.0 + 2f64.powi(-8)), bf16::ONE);
        assert_eq!(f64_to_bf16(1e300), bf16::INFINITY);
    }

    #[test]
    fn i64_to_narrow_rounds_once() {
        // 2^60 + 2^52 + 1: bf16 tie at 2^52 offset is broken by the +1.
        let x: i64 = (1 << 60) + (1 << 52) + 1;
        assert_eq!(i64_to_bf16(x), bf16::from_f64(((1u64 << 60) + (1u64 << 53)) as f64));
        assert_eq!(i64_to_f16(2049), f16::from_f32(2048.0));
        assert_eq!(i64_to_f16(2051), f16::from_f32(2052.0));
        assert_eq!(i64_to_f16(i64::MIN), f16::NEG_INFINITY);
        // 2^63 - 1 is not representable: truncate to 2^63 - 1024 (already odd).
        assert_eq!(i64_to_f64_odd(i64::MAX), 9_223_372_036_854_774_784.0);
        assert_eq!(i64_to_f64_odd(-5), -5.0);
    }
}
