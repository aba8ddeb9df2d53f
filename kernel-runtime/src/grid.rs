//! Launch grids: how many program instances run, per axis.
//!
//! A grid is a tuple of one to three integers, or a closure computing such a
//! tuple from the chosen meta-parameters, exactly as in Triton:
//!
//! ```
//! use kernel_runtime::{cdiv, Grid};
//! struct Meta { block: usize }
//! let n = 1000usize;
//! assert_eq!((4u32,).dims(&Meta { block: 0 }).unwrap(), [4, 1, 1]);
//! let grid = |m: &Meta| (cdiv(n, m.block),);
//! assert_eq!(grid.dims(&Meta { block: 256 }).unwrap(), [4, 1, 1]);
//! ```
//!
//! Design note: [`Grid<M>`] has one impl per tuple arity plus one blanket impl
//! for every `F: Fn(&M) -> G` with `G: GridDims`. These do not overlap because
//! the `Fn` traits are `#[fundamental]`: coherence may rely on tuples never
//! implementing them. [`GridDims`] is the closure-free half (tuples only), and
//! [`GridInt`] the integer types accepted in a grid and by [`cdiv`].

use crate::error::LaunchError;

/// Largest grid size along `x` (CUDA's limit).
pub const MAX_GRID_X: u32 = i32::MAX as u32;
/// Largest grid size along `y` and `z` (CUDA's limit).
pub const MAX_GRID_YZ: u32 = 65535;

mod sealed {
    pub trait Sealed {}
}

/// An integer type usable in a grid and by [`cdiv`]: `i32`, `i64`, `u32`,
/// `u64`, `usize`. Sealed.
///
/// ```
/// use kernel_runtime::GridInt;
/// fn widen<T: GridInt>(v: T) -> i128 { v.to_i128() }
/// assert_eq!(widen(-3i32), -3);
/// ```
pub trait GridInt: sealed::Sealed + Copy {
    /// The value, widened losslessly.
    fn to_i128(self) -> i128;
    /// Narrows back (wrapping, like `as`).
    #[doc(hidden)]
    fn from_i128_wrapping(v: i128) -> Self;
}

macro_rules! grid_int {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl GridInt for $t {
            #[inline]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline]
            fn from_i128_wrapping(v: i128) -> Self {
                v as $t
            }
        }
    )*};
}
grid_int!(i32, i64, u32, u64, usize);

/// Ceiling division `⌈a / b⌉` on the host (Triton's `cdiv`), for sizing grids.
///
/// Exact for every sign combination; a result that does not fit `T`
/// (only `cdiv(MIN, -1)`) wraps.
///
/// # Panics
/// When `b == 0`, like Rust's integer division.
///
/// ```
/// use kernel_runtime::cdiv;
/// assert_eq!(cdiv(1000usize, 128), 8);
/// assert_eq!(cdiv(1024u32, 128), 8);
/// assert_eq!(cdiv(0i64, 128), 0);
/// assert_eq!(cdiv(-7i32, 2), -3);
/// ```
pub fn cdiv<T: GridInt>(a: T, b: T) -> T {
    let (a, b) = (a.to_i128(), b.to_i128());
    assert!(b != 0, "cdiv: division by zero (cdiv({a}, 0))");
    let q = a / b;
    let q = if a % b != 0 && ((a < 0) == (b < 0)) { q + 1 } else { q };
    T::from_i128_wrapping(q)
}

/// A tuple of one to three grid sizes (`(x,)`, `(x, y)`, `(x, y, z)`).
///
/// ```
/// use kernel_runtime::GridDims;
/// assert_eq!((2usize, 3i32).grid_dims().unwrap(), [2, 3, 1]);
/// assert!((-1i32,).grid_dims().is_err());
/// ```
pub trait GridDims {
    /// The validated sizes `[x, y, z]` (missing axes are 1).
    ///
    /// # Errors
    /// [`LaunchError::InvalidGrid`] for a negative size or one above the limits
    /// ([`MAX_GRID_X`], [`MAX_GRID_YZ`]). Zero is allowed: nothing runs.
    fn grid_dims(&self) -> Result<[u32; 3], LaunchError>;
}

impl<A: GridInt> GridDims for (A,) {
    fn grid_dims(&self) -> Result<[u32; 3], LaunchError> {
        check_dims([self.0.to_i128(), 1, 1])
    }
}

impl<A: GridInt, B: GridInt> GridDims for (A, B) {
    fn grid_dims(&self) -> Result<[u32; 3], LaunchError> {
        check_dims([self.0.to_i128(), self.1.to_i128(), 1])
    }
}

impl<A: GridInt, B: GridInt, C: GridInt> GridDims for (A, B, C) {
    fn grid_dims(&self) -> Result<[u32; 3], LaunchError> {
        check_dims([self.0.to_i128(), self.1.to_i128(), self.2.to_i128()])
    }
}

/// Checks each axis against zero and the limits, naming the axis.
pub(crate) fn check_dims(dims: [i128; 3]) -> Result<[u32; 3], LaunchError> {
    let mut out = [0u32; 3];
    for (axis, (&v, o)) in dims.iter().zip(out.iter_mut()).enumerate() {
        let name = ["x", "y", "z"][axis];
        let limit = if axis == 0 { MAX_GRID_X } else { MAX_GRID_YZ };
        if v < 0 {
            return Err(LaunchError::InvalidGrid {
                reason: format!("size along {name} is {v}, but grid sizes must not be negative"),
            });
        }
        if v > i128::from(limit) {
            return Err(LaunchError::InvalidGrid {
                reason: format!("size along {name} is {v}, above the limit of {limit}"),
            });
        }
        *o = v as u32;
    }
    Ok(out)
}

/// A launch grid for a kernel whose meta-parameters have type `M`: a tuple of
/// integers, or a closure from `&M` to such a tuple.
///
/// ```
/// use kernel_runtime::{cdiv, Grid};
/// struct Meta { block_m: i64, block_n: i64 }
/// let (m, n) = (1000i64, 300i64);
/// let grid = |meta: &Meta| (cdiv(m, meta.block_m) * cdiv(n, meta.block_n),);
/// assert_eq!(grid.dims(&Meta { block_m: 128, block_n: 64 }).unwrap(), [40, 1, 1]);
/// assert_eq!((3u64, 2u64, 1u64).dims(&Meta { block_m: 1, block_n: 1 }).unwrap(), [3, 2, 1]);
/// ```
pub trait Grid<M> {
    /// The validated sizes `[x, y, z]` for these meta-parameters.
    ///
    /// # Errors
    /// [`LaunchError::InvalidGrid`] for a negative size or one above the limits.
    fn dims(&self, meta: &M) -> Result<[u32; 3], LaunchError>;
}

impl<M, A: GridInt> Grid<M> for (A,) {
    fn dims(&self, _meta: &M) -> Result<[u32; 3], LaunchError> {
        self.grid_dims()
    }
}

impl<M, A: GridInt, B: GridInt> Grid<M> for (A, B) {
    fn dims(&self, _meta: &M) -> Result<[u32; 3], LaunchError> {
        self.grid_dims()
    }
}

impl<M, A: GridInt, B: GridInt, C: GridInt> Grid<M> for (A, B, C) {
    fn dims(&self, _meta: &M) -> Result<[u32; 3], LaunchError> {
        self.grid_dims()
    }
}

impl<M, F, G> Grid<M> for F
where
    F: Fn(&M) -> G,
    G: GridDims,
{
    fn dims(&self, meta: &M) -> Result<[u32; 3], LaunchError> {
        self(meta).grid_dims()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Meta {
        block: u32,
    }

    fn dims_of<G: Grid<Meta>>(g: G, block: u32) -> Result<[u32; 3], LaunchError> {
        g.dims(&Meta { block })
    }

    #[test]
    fn tuples_and_closures() {
        assert_eq!(dims_of((7usize,), 1).unwrap(), [7, 1, 1]);
        assert_eq!(dims_of((7i64, 2u32), 1).unwrap(), [7, 2, 1]);
        assert_eq!(dims_of((1i32, 2i32, 3i32), 1).unwrap(), [1, 2, 3]);
        assert_eq!(dims_of(|m: &Meta| (cdiv(1000, m.block),), 128).unwrap(), [8, 1, 1]);
        assert_eq!(dims_of(|m: &Meta| (m.block, 2usize), 5).unwrap(), [5, 2, 1]);
        assert_eq!(dims_of((0u32,), 1).unwrap(), [0, 1, 1]);
    }

    #[test]
    fn invalid_grids_are_errors() {
        let err = dims_of((-1i32,), 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid launch grid: size along x is -1, but grid sizes must not be negative"
        );
        let err = dims_of((1u32, 65536u32), 1).unwrap_err();
        assert_eq!(err.to_string(), "invalid launch grid: size along y is 65536, above the limit of 65535");
        assert!(dims_of((1u32, 1u32, 70000u64), 1).is_err());
        assert!(dims_of((1u64 << 31,), 1).is_err());
        assert_eq!(dims_of(((1u64 << 31) - 1,), 1).unwrap(), [MAX_GRID_X, 1, 1]);
        assert!(matches!(dims_of(|_: &Meta| (i64::MIN,), 1), Err(LaunchError::InvalidGrid { .. })));
    }

    #[test]
    fn cdiv_is_ceiling_division() {
        assert_eq!(cdiv(10i32, 3), 4);
        assert_eq!(cdiv(9i32, 3), 3);
        assert_eq!(cdiv(-10i32, 3), -3);
        assert_eq!(cdiv(10i32, -3), -3);
        assert_eq!(cdiv(-10i32, -3), 4);
        assert_eq!(cdiv(u64::MAX, 2), 1u64 << 63);
        assert_eq!(cdiv(usize::MAX, 1), usize::MAX);
        assert_eq!(cdiv(i32::MIN, -1), i32::MIN); // wraps, like `as`
    }

    #[test]
    #[should_panic(expected = "cdiv: division by zero")]
    fn cdiv_by_zero_panics() {
        let _ = cdiv(1u32, 0);
    }
}
