//! The 8-bit floats `f8e4m3` (4 exponent bits, 3 mantissa bits, bias 7, no infinities, NaN
//! `0x7f`/`0xff`: PyTorch's `float8_e4m3fn`) and `f8e5m2` (5 and 2, bias 15, IEEE-like: the
//! top byte of an f16), carried as their bits.
//!
//! Conversions to them round to nearest even and saturate (`satfinite`): values beyond the
//! largest finite value (448 and 57344), infinities included, give that value with their sign;
//! NaN gives NaN. These are the semantics of PTX's `cvt.rn.satfinite` (sm_89 and later, used
//! on sm_90a) and of the `float8` crate that the CPU backend uses; the software conversion here
//! (every other target, and conversions from f64 everywhere: they round once, from f64) is
//! tested against that crate on the host. Conversions from them are exact.
//!
//! Plain Rust without `asm!`: the crate's host tests compile this file too.

/// The format of an 8-bit float.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fp8 {
    E4M3,
    E5M2,
}

impl Fp8 {
    /// Mantissa bits.
    const fn man(self) -> u32 {
        match self {
            Fp8::E4M3 => 3,
            Fp8::E5M2 => 2,
        }
    }
    /// The exponent of the smallest normal value, `1 - bias`.
    const fn emin(self) -> i32 {
        match self {
            Fp8::E4M3 => -6,
            Fp8::E5M2 => -14,
        }
    }
    /// The bits of the largest finite value.
    const fn max_bits(self) -> u8 {
        match self {
            Fp8::E4M3 => 0x7e,
            Fp8::E5M2 => 0x7b,
        }
    }
    /// The largest finite value.
    const fn max(self) -> f64 {
        match self {
            Fp8::E4M3 => 448.0,
            Fp8::E5M2 => 57344.0,
        }
    }
}

/// `x` rounded to nearest even in `fmt`, saturating to the largest finite value; NaN gives the
/// NaN `0x7f` (with `x`'s sign).
#[inline(always)]
pub fn f64_to_fp8(x: f64, fmt: Fp8) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 56) as u8) & 0x80;
    if x.is_nan() {
        return sign | 0x7f;
    }
    let a = f64::from_bits(bits & !(1 << 63));
    if a >= fmt.max() {
        return sign | fmt.max_bits();
    }
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Zero or an f64 subnormal: far below half the smallest 8-bit subnormal.
        return sign;
    }
    let exp = biased - 1023;
    let man = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    // The value is `man * 2^(exp - 52)`; its 8-bit quantum is `2^(max(exp, emin) - m)`.
    let (m, emin) = (fmt.man() as i32, fmt.emin());
    let shift = 52 - m + (emin - exp).max(0);
    let n = if shift >= 64 {
        0
    } else {
        let (q, rest, half) = (man >> shift, man & ((1u64 << shift) - 1), 1u64 << (shift - 1));
        q + u64::from(rest > half || (rest == half && q & 1 == 1))
    };
    // Normal values: exponent field `exp - emin + 1`, mantissa `n - 2^m` (a carry into
    // `2^(m+1)` moves to the next exponent); subnormals (and the smallest normal after a
    // carry): `n` itself.
    let code = (((exp - emin).max(0) as u64) << m) + n;
    sign | code as u8
}

/// `x` (an f32, so exactly as from f64) rounded to `fmt` as [`f64_to_fp8`] does.
#[inline(always)]
pub fn f32_to_fp8_soft(x: f32, fmt: Fp8) -> u8 {
    f64_to_fp8(x as f64, fmt)
}

/// The value of `bits` in `fmt` (exact).
#[inline(always)]
pub fn fp8_to_f32_soft(bits: u8, fmt: Fp8) -> f32 {
    let sign = ((bits & 0x80) as u32) << 24;
    let (m, emin) = (fmt.man(), fmt.emin());
    let e = ((bits & 0x7f) >> m) as i32;
    let f = (bits & ((1 << m) - 1)) as u32;
    let nan = match fmt {
        Fp8::E4M3 => bits & 0x7f == 0x7f,
        Fp8::E5M2 => e == 31 && f != 0,
    };
    if nan {
        return f32::from_bits(sign | 0x7fc0_0000);
    }
    if fmt == Fp8::E5M2 && e == 31 {
        return f32::from_bits(sign | 0x7f80_0000);
    }
    if e == 0 {
        // Subnormal: `f * 2^(emin - m)`, exact in f32.
        let v = f as f32 * f32::from_bits(((emin - m as i32 + 127) as u32) << 23);
        return f32::from_bits(sign | v.to_bits());
    }
    let exp = (e - 1 + emin + 127) as u32;
    f32::from_bits(sign | exp << 23 | f << (23 - m))
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use float8::{F8E4M3, F8E5M2};
    use std::{vec, vec::Vec};

    fn reference(x: f64, fmt: Fp8) -> u8 {
        match fmt {
            Fp8::E4M3 => F8E4M3::from_f64(x).to_bits(),
            Fp8::E5M2 => F8E5M2::from_f64(x).to_bits(),
        }
    }

    fn reference_value(bits: u8, fmt: Fp8) -> f32 {
        match fmt {
            Fp8::E4M3 => F8E4M3::from_bits(bits).to_f32(),
            Fp8::E5M2 => F8E5M2::from_bits(bits).to_f32(),
        }
    }

    fn same(a: u8, b: u8, fmt: Fp8) -> bool {
        let nan = |v: u8| fp8_to_f32_soft(v, fmt).is_nan();
        a == b || (nan(a) && nan(b))
    }

    #[test]
    fn every_value_converts_exactly_and_back() {
        for fmt in [Fp8::E4M3, Fp8::E5M2] {
            for bits in 0..=255u8 {
                let v = fp8_to_f32_soft(bits, fmt);
                let r = reference_value(bits, fmt);
                assert!(v.to_bits() == r.to_bits() || (v.is_nan() && r.is_nan()), "{fmt:?} {bits:#04x}: {v} vs {r}");
                if v.is_finite() {
                    assert_eq!(f32_to_fp8_soft(v, fmt), bits, "{fmt:?} {bits:#04x} round trip");
                }
            }
        }
    }

    #[test]
    fn rounding_matches_the_float8_crate() {
        // Midpoints between neighbours (ties to even), points just beside them, the saturation
        // edge, and pseudo-random f32 bit patterns over the whole range.
        let mut xs: Vec<f64> = vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-300, -1e300, 464.0, 465.0, 61440.0, 61441.0];
        for fmt in [Fp8::E4M3, Fp8::E5M2] {
            for bits in 0..=254u8 {
                let (a, b) = (fp8_to_f32_soft(bits, fmt) as f64, fp8_to_f32_soft(bits + 1, fmt) as f64);
                if a.is_finite() && b.is_finite() {
                    let mid = (a + b) / 2.0;
                    xs.extend([mid, -mid, mid * (1.0 + 1e-9), mid * (1.0 - 1e-9), a, -a]);
                }
            }
        }
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..400_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            xs.push(f32::from_bits(s as u32) as f64);
            xs.push(f64::from_bits(s));
        }
        for fmt in [Fp8::E4M3, Fp8::E5M2] {
            for &x in &xs {
                let (got, want) = (f64_to_fp8(x, fmt), reference(x, fmt));
                assert!(same(got, want, fmt), "{fmt:?} {x:e}: {got:#04x}, float8 {want:#04x}");
                let xf = x as f32;
                let (got, want) = (f32_to_fp8_soft(xf, fmt), reference(xf as f64, fmt));
                assert!(same(got, want, fmt), "{fmt:?} {xf:e} (f32): {got:#04x}, float8 {want:#04x}");
            }
        }
    }
}
