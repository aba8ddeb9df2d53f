//! Element types: [`DTypeKind`] (a runtime tag) and [`DType`] (the types a
//! [`Tensor`](crate::Tensor) can hold).

use std::fmt;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

use half::{bf16, f16};

use crate::{f8e4m3, f8e5m2};

use crate::convert;
use crate::cpu::{Cast, Num};

/// The element type of a tensor, a kernel parameter or a block, as a value.
///
/// ```
/// use kernel_runtime::DTypeKind;
/// assert_eq!(DTypeKind::F16.to_string(), "f16");
/// assert_eq!(DTypeKind::F16.size_bytes(), 2);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DTypeKind {
    /// IEEE 754 binary16.
    F16,
    /// bfloat16 (8 exponent bits, 7 mantissa bits).
    BF16,
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit signed integer.
    I64,
    /// 8-bit signed integer.
    I8,
    /// 16-bit signed integer.
    I16,
    /// 8-bit unsigned integer.
    U8,
    /// 16-bit unsigned integer.
    U16,
    /// Boolean (one byte on the host).
    Bool,
    /// 8-bit float with 4 exponent and 3 mantissa bits, no infinities (PyTorch's
    /// `float8_e4m3fn`).
    F8E4M3,
    /// 8-bit float with 5 exponent and 2 mantissa bits (PyTorch's `float8_e5m2`).
    F8E5M2,
}

impl DTypeKind {
    /// Size of one element in bytes.
    ///
    /// ```
    /// use kernel_runtime::DTypeKind;
    /// assert_eq!(DTypeKind::I64.size_bytes(), 8);
    /// assert_eq!(DTypeKind::Bool.size_bytes(), 1);
    /// ```
    pub const fn size_bytes(self) -> usize {
        match self {
            DTypeKind::Bool | DTypeKind::I8 | DTypeKind::U8 | DTypeKind::F8E4M3 | DTypeKind::F8E5M2 => 1,
            DTypeKind::F16 | DTypeKind::BF16 | DTypeKind::I16 | DTypeKind::U16 => 2,
            DTypeKind::F32 | DTypeKind::I32 | DTypeKind::U32 => 4,
            DTypeKind::F64 | DTypeKind::I64 => 8,
        }
    }

    /// The lowercase Rust-style name (`"f16"`, `"bf16"`, `"i32"`, ...).
    ///
    /// ```
    /// use kernel_runtime::DTypeKind;
    /// assert_eq!(DTypeKind::BF16.name(), "bf16");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            DTypeKind::F16 => "f16",
            DTypeKind::BF16 => "bf16",
            DTypeKind::F32 => "f32",
            DTypeKind::F64 => "f64",
            DTypeKind::I32 => "i32",
            DTypeKind::U32 => "u32",
            DTypeKind::I64 => "i64",
            DTypeKind::I8 => "i8",
            DTypeKind::I16 => "i16",
            DTypeKind::U8 => "u8",
            DTypeKind::U16 => "u16",
            DTypeKind::Bool => "bool",
            DTypeKind::F8E4M3 => "f8e4m3",
            DTypeKind::F8E5M2 => "f8e5m2",
        }
    }

    /// Whether this is a floating-point type.
    ///
    /// ```
    /// use kernel_runtime::DTypeKind;
    /// assert!(DTypeKind::BF16.is_float());
    /// assert!(!DTypeKind::U32.is_float());
    /// ```
    pub const fn is_float(self) -> bool {
        matches!(self, DTypeKind::F16 | DTypeKind::BF16 | DTypeKind::F32 | DTypeKind::F64 | DTypeKind::F8E4M3 | DTypeKind::F8E5M2)
    }
}

impl fmt::Display for DTypeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub(crate) mod sealed {
    //! Storage machinery of [`DType`](super::DType), unreachable from outside
    //! the crate (so `DType` cannot be implemented elsewhere).

    use std::fmt;
    use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

    /// A borrowed slice of tensor storage, whatever its element width.
    #[derive(Clone, Copy, Debug)]
    pub enum Cells<'a> {
        U8(&'a [AtomicU8]),
        U16(&'a [AtomicU16]),
        U32(&'a [AtomicU32]),
        U64(&'a [AtomicU64]),
    }

    impl Cells<'_> {
        pub fn len(&self) -> usize {
            match self {
                Cells::U8(s) => s.len(),
                Cells::U16(s) => s.len(),
                Cells::U32(s) => s.len(),
                Cells::U64(s) => s.len(),
            }
        }
    }

    /// What a GPU buffer's element must be (with the `cuda` feature): `DeviceRepr`, and all-zero
    /// bits are zero.
    #[cfg(feature = "cuda")]
    pub trait DeviceElement: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits {}
    #[cfg(feature = "cuda")]
    impl<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits> DeviceElement for T {}
    /// Nothing without the `cuda` feature.
    #[cfg(not(feature = "cuda"))]
    pub trait DeviceElement {}
    #[cfg(not(feature = "cuda"))]
    impl<T> DeviceElement for T {}

    /// How a tensor element is stored: on the CPU one atomic cell per element,
    /// so that all views and all concurrently running program instances may
    /// read and write it without `unsafe` (relaxed atomics compile to plain
    /// moves); on a GPU as itself (`DeviceRepr`, all-zero bits are zero).
    pub trait Storage: Copy + Default + Send + Sync + 'static + DeviceElement {
        type Atomic: Send + Sync + fmt::Debug + 'static;
        fn new_atomic(self) -> Self::Atomic;
        fn load(cell: &Self::Atomic) -> Self;
        fn store(cell: &Self::Atomic, v: Self);
        fn cells(cells: &[Self::Atomic]) -> Cells<'_>;
        fn from_cells<'a>(cells: &Cells<'a>) -> Option<&'a [Self::Atomic]>;
        /// Replaces the value by `f(value)` atomically (retrying on contention); the old value.
        fn update(cell: &Self::Atomic, order: Ordering, f: impl FnMut(Self) -> Self) -> Self;
        /// Writes `new` if the cell holds the bits of `cmp`, atomically; the old value.
        fn compare_exchange(cell: &Self::Atomic, cmp: Self, new: Self, order: Ordering) -> Self;
    }

    /// The ordering of a failed compare-and-swap for an atomic of ordering `order`.
    pub(crate) fn failure_order(order: Ordering) -> Ordering {
        match order {
            Ordering::AcqRel | Ordering::Acquire => Ordering::Acquire,
            Ordering::SeqCst => Ordering::SeqCst,
            _ => Ordering::Relaxed,
        }
    }
}

use sealed::{Cells, Storage};

/// An element type a [`Tensor`](crate::Tensor) can hold: `f16`, `bf16`, `f32`,
/// `f64`, `f8e4m3`, `f8e5m2`, `i8`, `i16`, `i32`, `i64`, `u8`, `u16` and `u32`. Sealed: implemented only by this crate.
///
/// ```
/// use kernel_runtime::{f16, DType, DTypeKind};
/// assert_eq!(<f16 as DType>::KIND, DTypeKind::F16);
/// assert_eq!(<f16 as DType>::from_f64(0.1).to_f64(), 0.0999755859375); // rounded to nearest even
/// assert_eq!(<i32 as DType>::from_f64(2.5), 2); // ties to even for integers too
/// ```
pub trait DType: Storage + Num + Cast {
    /// The runtime tag of this type.
    const KIND: DTypeKind;

    /// Converts to f64 (exact for every type except large `i64`).
    ///
    /// ```
    /// use kernel_runtime::{bf16, DType};
    /// assert_eq!(DType::to_f64(bf16::from_f32(1.5)), 1.5);
    /// ```
    fn to_f64(self) -> f64;

    /// Converts from f64, rounding to nearest, ties to even. Integer types
    /// round to the nearest integer (ties to even), then saturate; NaN gives 0.
    ///
    /// ```
    /// use kernel_runtime::DType;
    /// assert_eq!(<u32 as DType>::from_f64(-3.0), 0);
    /// assert_eq!(<f32 as DType>::from_f64(0.1), 0.1f32);
    /// ```
    fn from_f64(v: f64) -> Self;
}

macro_rules! storage_impl {
    ($t:ty, $atomic:ident, $variant:ident, $to_bits:expr, $from_bits:expr) => {
        impl Storage for $t {
            type Atomic = $atomic;
            #[inline]
            fn new_atomic(self) -> $atomic {
                $atomic::new($to_bits(self))
            }
            #[inline]
            fn load(cell: &$atomic) -> Self {
                $from_bits(cell.load(Ordering::Relaxed))
            }
            #[inline]
            fn store(cell: &$atomic, v: Self) {
                cell.store($to_bits(v), Ordering::Relaxed)
            }
            #[inline]
            fn cells(cells: &[$atomic]) -> Cells<'_> {
                Cells::$variant(cells)
            }
            #[inline]
            fn from_cells<'a>(cells: &Cells<'a>) -> Option<&'a [$atomic]> {
                match *cells {
                    Cells::$variant(s) => Some(s),
                    _ => None,
                }
            }
            #[inline]
            fn update(cell: &$atomic, order: Ordering, mut f: impl FnMut(Self) -> Self) -> Self {
                let fail = sealed::failure_order(order);
                let prev = cell.fetch_update(order, fail, |b| Some($to_bits(f($from_bits(b))))).unwrap_or_else(|b| b);
                $from_bits(prev)
            }
            #[inline]
            fn compare_exchange(cell: &$atomic, cmp: Self, new: Self, order: Ordering) -> Self {
                let fail = sealed::failure_order(order);
                match cell.compare_exchange($to_bits(cmp), $to_bits(new), order, fail) {
                    Ok(b) | Err(b) => $from_bits(b),
                }
            }
        }
    };
}

storage_impl!(f16, AtomicU16, U16, f16::to_bits, f16::from_bits);
storage_impl!(bf16, AtomicU16, U16, bf16::to_bits, bf16::from_bits);
storage_impl!(f32, AtomicU32, U32, f32::to_bits, f32::from_bits);
storage_impl!(f64, AtomicU64, U64, f64::to_bits, f64::from_bits);
storage_impl!(i32, AtomicU32, U32, |v: i32| v as u32, |b: u32| b as i32);
storage_impl!(u32, AtomicU32, U32, |v: u32| v, |b: u32| b);
storage_impl!(i64, AtomicU64, U64, |v: i64| v as u64, |b: u64| b as i64);
storage_impl!(i8, AtomicU8, U8, |v: i8| v as u8, |b: u8| b as i8);
storage_impl!(u8, AtomicU8, U8, |v: u8| v, |b: u8| b);
storage_impl!(i16, AtomicU16, U16, |v: i16| v as u16, |b: u16| b as i16);
storage_impl!(u16, AtomicU16, U16, |v: u16| v, |b: u16| b);
storage_impl!(f8e4m3, AtomicU8, U8, |v: f8e4m3| v.to_bits(), f8e4m3::from_bits);
storage_impl!(f8e5m2, AtomicU8, U8, |v: f8e5m2| v.to_bits(), f8e5m2::from_bits);

impl DType for f16 {
    const KIND: DTypeKind = DTypeKind::F16;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        convert::f64_to_f16(v)
    }
}

impl DType for bf16 {
    const KIND: DTypeKind = DTypeKind::BF16;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        convert::f64_to_bf16(v)
    }
}

impl DType for f32 {
    const KIND: DTypeKind = DTypeKind::F32;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl DType for f64 {
    const KIND: DTypeKind = DTypeKind::F64;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

macro_rules! fp8_dtype {
    ($t:ty, $kind:ident) => {
        impl DType for $t {
            const KIND: DTypeKind = DTypeKind::$kind;
            fn to_f64(self) -> f64 {
                <$t>::to_f64(&self)
            }
            /// Rounded to nearest even once, saturating to the largest finite value.
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
        }
    };
}
fp8_dtype!(f8e4m3, F8E4M3);
fp8_dtype!(f8e5m2, F8E5M2);

macro_rules! int_dtype {
    ($t:ty, $kind:ident) => {
        impl DType for $t {
            const KIND: DTypeKind = DTypeKind::$kind;
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                // `as` saturates and maps NaN to 0.
                v.round_ties_even() as $t
            }
        }
    };
}

int_dtype!(i32, I32);
int_dtype!(u32, U32);
int_dtype!(i64, I64);
int_dtype!(i8, I8);
int_dtype!(i16, I16);
int_dtype!(u8, U8);
int_dtype!(u16, U16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_names() {
        assert_eq!(<bf16 as DType>::KIND.to_string(), "bf16");
        assert_eq!(<u32 as DType>::KIND, DTypeKind::U32);
        assert_eq!(DTypeKind::F64.size_bytes(), 8);
        assert!(!DTypeKind::Bool.is_float());
    }

    #[test]
    fn from_f64_rounds_and_saturates() {
        assert_eq!(<i32 as DType>::from_f64(3.5), 4);
        assert_eq!(<i32 as DType>::from_f64(-2.5), -2);
        assert_eq!(<i32 as DType>::from_f64(1e20), i32::MAX);
        assert_eq!(<i64 as DType>::from_f64(f64::NAN), 0);
        assert_eq!(<u32 as DType>::from_f64(-1.0), 0);
        assert_eq!(<f16 as DType>::from_f64(1.0 + 2f64.powi(-11) + 1e-12), f16::from_f32(1.0 + 2f32.powi(-10)));
    }

    #[test]
    fn atomic_round_trip() {
        let c = <i32 as Storage>::new_atomic(-7);
        assert_eq!(<i32 as Storage>::load(&c), -7);
        <i32 as Storage>::store(&c, i32::MIN);
        assert_eq!(<i32 as Storage>::load(&c), i32::MIN);
        let h = <bf16 as Storage>::new_atomic(bf16::from_f32(-2.0));
        assert_eq!(<bf16 as Storage>::load(&h), bf16::from_f32(-2.0));
        let cells = [<f32 as Storage>::new_atomic(1.0)];
        let erased = <f32 as Storage>::cells(&cells);
        assert!(<f32 as Storage>::from_cells(&erased).is_some());
        assert!(<i64 as Storage>::from_cells(&erased).is_none());
        assert_eq!(erased.len(), 1);
    }
}
