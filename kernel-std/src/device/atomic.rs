//! Atomic read-modify-writes on global memory, one element at a time: `atom` with Triton's
//! memory-order (`SEM`: 0 relaxed, 1 acquire, 2 release, 3 acq_rel) and scope (`SCOPE`:
//! 0 gpu, 1 cta, 2 sys) as const parameters. Where PTX has no instruction for an operation
//! and type (float `max`/`min`, `bf16` add, 16-bit exchange) it is a compare-and-swap loop.

use super::{trap, Elem, Int, Num, BF16, F16};
use core::arch::asm;

/// One `atom` instruction with one operand: `old = op([p], a)`.
macro_rules! atom1 {
    ($sem:literal, $scope:literal, $op:expr, $reg:ident, $t:ty, $p:expr, $a:expr) => {{
        let o: $t;
        unsafe {
            asm!(concat!("atom.", $sem, ".", $scope, ".global.", $op, " {o}, [{p}], {a};"),
                 o = out($reg) o, p = in(reg64) $p, a = in($reg) $a, options(nostack))
        };
        o
    }};
}

/// `atom.cas`: `old = [p] == a ? b : [p]`.
macro_rules! atom2 {
    ($sem:literal, $scope:literal, $op:expr, $reg:ident, $t:ty, $p:expr, $a:expr, $b:expr) => {{
        let o: $t;
        unsafe {
            asm!(concat!("atom.", $sem, ".", $scope, ".global.", $op, " {o}, [{p}], {a}, {b};"),
                 o = out($reg) o, p = in(reg64) $p, a = in($reg) $a, b = in($reg) $b, options(nostack))
        };
        o
    }};
}

/// `$m!(sem, scope, ...)` for the run-time pair `(SEM, SCOPE)` (constants after inlining).
macro_rules! dispatch {
    ($sem:expr, $scope:expr, $m:ident!($($args:tt)*)) => {
        match ($sem, $scope) {
            (0, 0) => $m!("relaxed", "gpu", $($args)*),
            (0, 1) => $m!("relaxed", "cta", $($args)*),
            (0, 2) => $m!("relaxed", "sys", $($args)*),
            (1, 0) => $m!("acquire", "gpu", $($args)*),
            (1, 1) => $m!("acquire", "cta", $($args)*),
            (1, 2) => $m!("acquire", "sys", $($args)*),
            (2, 0) => $m!("release", "gpu", $($args)*),
            (2, 1) => $m!("release", "cta", $($args)*),
            (2, 2) => $m!("release", "sys", $($args)*),
            (3, 0) => $m!("acq_rel", "gpu", $($args)*),
            (3, 1) => $m!("acq_rel", "cta", $($args)*),
            (3, 2) => $m!("acq_rel", "sys", $($args)*),
            _ => trap(),
        }
    };
}

/// An element type with atomics. Every operation returns the value the element held before.
/// The defaults are compare-and-swap loops over [`AtomicElem::cas`].
pub trait AtomicElem: Elem + Num {
    /// The raw bits, for the compare of a compare-and-swap loop.
    fn bits(self) -> u64;
    /// `[p] == cmp ? new : [p]` (bitwise compare).
    fn cas<const SEM: u8, const SCOPE: u8>(p: *mut Self, cmp: Self, new: Self) -> Self;
    /// `[p] = f([p])` by compare-and-swap.
    #[inline(always)]
    fn update<const SEM: u8, const SCOPE: u8>(p: *mut Self, f: impl Fn(Self) -> Self) -> Self {
        let mut old = unsafe { core::ptr::read_volatile(p) };
        loop {
            let prev = Self::cas::<SEM, SCOPE>(p, old, f(old));
            if prev.bits() == old.bits() {
                return prev;
            }
            old = prev;
        }
    }
    #[inline(always)]
    fn add<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |x| <Self as Num>::add(x, v))
    }
    /// `maximum([p], v)`: a NaN operand is ignored, as by `maximum`.
    #[inline(always)]
    fn max<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |x| <Self as Num>::max(x, v))
    }
    #[inline(always)]
    fn min<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |x| <Self as Num>::min(x, v))
    }
    #[inline(always)]
    fn xchg<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |_| v)
    }
}

/// Bitwise atomics of the integer types.
pub trait AtomicInt: AtomicElem + Int {
    #[inline(always)]
    fn and<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |x| <Self as Int>::and(x, v))
    }
    #[inline(always)]
    fn or<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |x| <Self as Int>::or(x, v))
    }
    #[inline(always)]
    fn xor<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        Self::update::<SEM, SCOPE>(p, |x| <Self as Int>::xor(x, v))
    }
}

/// 32- and 64-bit types: `atom.cas`, `atom.exch` and `atom.add` in one instruction.
macro_rules! wide_atomics {
    ($t:ty, $reg:ident, $b:literal, $add:literal) => {
        impl AtomicElem for $t {
            #[inline(always)]
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
            #[inline(always)]
            fn cas<const SEM: u8, const SCOPE: u8>(p: *mut Self, cmp: Self, new: Self) -> Self {
                dispatch!(SEM, SCOPE, atom2!(concat!("cas.", $b), $reg, $t, p as u64, cmp, new))
            }
            #[inline(always)]
            fn add<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!($add, $reg, $t, p as u64, v))
            }
            #[inline(always)]
            fn xchg<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!(concat!("exch.", $b), $reg, $t, p as u64, v))
            }
        }
    };
}
wide_atomics!(f32, reg32, "b32", "add.f32");
wide_atomics!(f64, reg64, "b64", "add.f64");

/// Integers: also `atom.max`/`atom.min` (signed or unsigned) and the bitwise operations.
macro_rules! int_atomics {
    ($t:ty, $reg:ident, $b:literal, $add:literal, $max:literal, $min:literal, $bits:ty) => {
        impl AtomicElem for $t {
            #[inline(always)]
            fn bits(self) -> u64 {
                self as $bits as u64
            }
            #[inline(always)]
            fn cas<const SEM: u8, const SCOPE: u8>(p: *mut Self, cmp: Self, new: Self) -> Self {
                dispatch!(SEM, SCOPE, atom2!(concat!("cas.", $b), $reg, $t, p as u64, cmp, new))
            }
            #[inline(always)]
            fn add<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!($add, $reg, $t, p as u64, v))
            }
            #[inline(always)]
            fn max<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!($max, $reg, $t, p as u64, v))
            }
            #[inline(always)]
            fn min<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!($min, $reg, $t, p as u64, v))
            }
            #[inline(always)]
            fn xchg<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!(concat!("exch.", $b), $reg, $t, p as u64, v))
            }
        }
        impl AtomicInt for $t {
            #[inline(always)]
            fn and<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!(concat!("and.", $b), $reg, $t, p as u64, v))
            }
            #[inline(always)]
            fn or<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!(concat!("or.", $b), $reg, $t, p as u64, v))
            }
            #[inline(always)]
            fn xor<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
                dispatch!(SEM, SCOPE, atom1!(concat!("xor.", $b), $reg, $t, p as u64, v))
            }
        }
    };
}
int_atomics!(i32, reg32, "b32", "add.u32", "max.s32", "min.s32", u32);
int_atomics!(u32, reg32, "b32", "add.u32", "max.u32", "min.u32", u32);
int_atomics!(i64, reg64, "b64", "add.u64", "max.s64", "min.s64", u64);

/// f16 and bf16: `atom.cas.b16` (and `atom.add.noftz.f16` for f16 adds).
impl AtomicElem for F16 {
    #[inline(always)]
    fn bits(self) -> u64 {
        self.0 as u64
    }
    #[inline(always)]
    fn cas<const SEM: u8, const SCOPE: u8>(p: *mut Self, cmp: Self, new: Self) -> Self {
        F16(dispatch!(SEM, SCOPE, atom2!("cas.b16", reg16, u16, p as u64, cmp.0, new.0)))
    }
    #[inline(always)]
    fn add<const SEM: u8, const SCOPE: u8>(p: *mut Self, v: Self) -> Self {
        F16(dispatch!(SEM, SCOPE, atom1!("add.noftz.f16", reg16, u16, p as u64, v.0)))
    }
}

impl AtomicElem for BF16 {
    #[inline(always)]
    fn bits(self) -> u64 {
        self.0 as u64
    }
    #[inline(always)]
    fn cas<const SEM: u8, const SCOPE: u8>(p: *mut Self, cmp: Self, new: Self) -> Self {
        BF16(dispatch!(SEM, SCOPE, atom2!("cas.b16", reg16, u16, p as u64, cmp.0, new.0)))
    }
}
