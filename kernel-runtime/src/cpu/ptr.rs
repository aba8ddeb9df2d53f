//! [`P`], the element pointer of the CPU backend, and [`ptr_add`].

use super::num::Int;

/// An element pointer: which pointer argument (`buf`, numbered among the
/// kernel's pointer arguments only) and an element offset from that
/// argument's first element. Any offset may be formed; only `load`/`store`
/// check it.
///
/// ```
/// use kernel_runtime::__private::cpu::{ptr_add, P};
/// let p = ptr_add(P::arg(1), 5i32);
/// assert_eq!(p, P { buf: 1, off: 5 });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct P {
    /// Index of the pointer argument.
    pub buf: u32,
    /// Offset in elements from the argument's first element.
    pub off: i64,
}

impl P {
    /// A pointer to element 0 of pointer argument `i`.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::P;
    /// assert_eq!(P::arg(2).off, 0);
    /// ```
    pub const fn arg(i: u32) -> Self {
        P { buf: i, off: 0 }
    }
}

/// `p + n` elements, wrapping on overflow (the result is then simply out of
/// bounds).
///
/// ```
/// use kernel_runtime::__private::cpu::{ptr_add, P};
/// assert_eq!(ptr_add(P::arg(0), -3i64).off, -3);
/// assert_eq!(ptr_add(P { buf: 0, off: i64::MAX }, 1i32).off, i64::MIN);
/// assert_eq!(ptr_add(P::arg(0), u32::MAX).off, 4_294_967_295);
/// ```
#[inline]
pub fn ptr_add<I: Int>(p: P, n: I) -> P {
    P { buf: p.buf, off: p.off.wrapping_add(n.to_i64()) }
}
