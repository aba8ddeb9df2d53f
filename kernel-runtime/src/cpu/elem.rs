//! [`Elem`]: the element types a block can hold.

use std::fmt::Debug;

use half::{bf16, f16};

use crate::{f8e4m3, f8e5m2};

use super::ptr::P;

pub(crate) mod sealed {
    /// Seals [`Elem`](super::Elem) and every trait built on it.
    pub trait Sealed {}
}

/// A block element type: `f16`, `bf16`, `f8e4m3`, `f8e5m2`, `f32`, `f64`, `i8`, `i16`, `i32`, `i64`,
/// `u8`, `u16`, `u32`, `bool` and the pointer type [`P`]. Sealed.
///
/// `Default` is the zero value (what a masked-off `load` without `other` gives).
///
/// ```
/// use kernel_runtime::__private::cpu::{full, Elem};
/// fn zeros<T: Elem>(n: usize) -> Vec<T> { full(&[n], T::default()).data().to_vec() }
/// assert_eq!(zeros::<i32>(2), vec![0, 0]);
/// ```
pub trait Elem: sealed::Sealed + Copy + Send + Sync + Debug + Default + PartialEq + 'static {}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Elem for $t {}
    )*};
}
elem!(f16, bf16, f8e4m3, f8e5m2, f32, f64, i8, i16, i32, i64, u8, u16, u32, bool, P);
