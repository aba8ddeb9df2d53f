//! Reductions along one axis ([`reduce_sum`], [`reduce_max`], [`reduce_min`], [`reduce_xor`])
//! and inclusive scans ([`scan`]).

use super::blk::Blk;
use super::broadcast::internal;
use super::elem::Elem;
use super::num::{Int, Num};

/// Sum along `axis`, which is removed from the shape. `f16`/`bf16` accumulate
/// in f32 and round once; integers wrap; an empty axis sums to 0.
///
/// # Panics
/// When `axis >= rank` (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{reduce_sum, Blk};
/// let b = Blk::from_vec(vec![2, 3], vec![1, 2, 3, 4, 5, 6]);
/// assert_eq!(reduce_sum(&b, 0).data(), &[5, 7, 9]);
/// assert_eq!(reduce_sum(&b, 1).data(), &[6, 15]);
/// ```
pub fn reduce_sum<T: Num>(b: &Blk<T>, axis: usize) -> Blk<T> {
    reduce("reduce_sum", b, axis, T::sum_strided)
}

/// Maximum along `axis`, which is removed from the shape (NaN operands are
/// ignored; an empty axis gives the lowest value, `-inf` for floats).
///
/// # Panics
/// When `axis >= rank` (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{reduce_max, Blk};
/// let b = Blk::from_vec(vec![2, 2], vec![1.0f32, -2.0, 0.5, 3.0]);
/// assert_eq!(reduce_max(&b, 1).data(), &[1.0, 3.0]);
/// ```
pub fn reduce_max<T: Num>(b: &Blk<T>, axis: usize) -> Blk<T> {
    reduce("reduce_max", b, axis, |d, start, stride, n| {
        (0..n).fold(T::lowest(), |acc, i| acc.max(d[start + i * stride]))
    })
}

/// Minimum along `axis`, which is removed from the shape (NaN operands are
/// ignored; an empty axis gives the highest value, `+inf` for floats).
///
/// # Panics
/// When `axis >= rank` (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{reduce_min, Blk};
/// let b = Blk::from_vec(vec![2, 2], vec![1i64, -2, 5, 3]);
/// assert_eq!(reduce_min(&b, 0).data(), &[1, -2]);
/// ```
pub fn reduce_min<T: Num>(b: &Blk<T>, axis: usize) -> Blk<T> {
    reduce("reduce_min", b, axis, |d, start, stride, n| {
        (0..n).fold(T::highest(), |acc, i| acc.min(d[start + i * stride]))
    })
}

/// Bitwise xor along `axis` (integers), which is removed from the shape.
///
/// ```
/// use kernel_runtime::__private::cpu::{reduce_xor, Blk};
/// assert_eq!(reduce_xor(&Blk::from_vec(vec![3], vec![1u32, 2, 7]), 0).into_scalar(), 4);
/// ```
pub fn reduce_xor<T: Int + Num>(b: &Blk<T>, axis: usize) -> Blk<T> {
    reduce("reduce_xor", b, axis, |d, start, stride, n| (0..n).fold(T::zero(), |acc, i| acc.xor(d[start + i * stride])))
}

/// Inclusive scan along `axis` with `f` (the shape is kept); from the end when `reverse`.
///
/// # Panics
/// When `axis >= rank` (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{scan, Blk, Num};
/// let b = Blk::from_vec(vec![2, 3], vec![1, 2, 3, 4, 5, 6]);
/// assert_eq!(scan(&b, 1, false, Num::add).data(), &[1, 3, 6, 4, 9, 15]);
/// assert_eq!(scan(&b, 0, true, Num::mul).data(), &[4, 10, 18, 4, 5, 6]);
/// ```
pub fn scan<T: Elem>(b: &Blk<T>, axis: usize, reverse: bool, f: impl Fn(T, T) -> T) -> Blk<T> {
    if axis >= b.shape.len() {
        internal(format!("scan: axis {axis} out of range for shape {:?}", b.shape));
    }
    let n = b.shape[axis];
    let inner: usize = b.shape[axis + 1..].iter().product();
    let mut data = b.data.clone();
    for o in 0..b.shape[..axis].iter().product() {
        for i in 0..inner {
            let at = |p: usize| o * n * inner + i + (if reverse { n - 1 - p } else { p }) * inner;
            for p in 1..n {
                data[at(p)] = f(data[at(p - 1)], data[at(p)]);
            }
        }
    }
    Blk { shape: b.shape.clone(), data }
}

/// `f` folded along `axis` (which is removed), starting from each line's first element:
/// `reduce(x, axis, combine)` with a combine function.
///
/// # Panics
/// When `axis >= rank` or the axis is empty (internal errors: blocks have no empty axis).
///
/// ```
/// use kernel_runtime::__private::cpu::{reduce_with, Blk};
/// let b = Blk::from_vec(vec![2, 3], vec![1, 5, 3, 4, 2, 6]);
/// assert_eq!(reduce_with(&b, 1, |x: i32, y| x.max(y) * 10 + x.min(y)).data(), &[513, 426]);
/// ```
pub fn reduce_with<T: Num>(b: &Blk<T>, axis: usize, f: impl Fn(T, T) -> T) -> Blk<T> {
    reduce("reduce_with", b, axis, |d, start, stride, n| {
        if n == 0 {
            internal("reduce_with: an empty axis".to_string());
        }
        (1..n).fold(d[start], |acc, i| f(acc, d[start + i * stride]))
    })
}

/// Applies `f(data, start, stride, n)` to every line along `axis`.
fn reduce<T: Num>(
    op: &str,
    b: &Blk<T>,
    axis: usize,
    f: impl Fn(&[T], usize, usize, usize) -> T,
) -> Blk<T> {
    if axis >= b.shape.len() {
        internal(format!("{op}: axis {axis} out of range for shape {:?}", b.shape));
    }
    let outer: usize = b.shape[..axis].iter().product();
    let n = b.shape[axis];
    let inner: usize = b.shape[axis + 1..].iter().product();
    let mut shape = b.shape.clone();
    shape.remove(axis);
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            data.push(f(&b.data, o * n * inner + i, inner, n));
        }
    }
    Blk { shape, data }
}

#[cfg(test)]
mod tests {
    use half::f16;

    use super::*;

    #[test]
    fn both_axes_of_a_matrix() {
        let b = Blk::from_vec(vec![3, 2], vec![1.0f32, 2.0, -3.0, 4.0, 5.0, -6.0]);
        assert_eq!(reduce_sum(&b, 0).data(), &[3.0, 0.0]);
        assert_eq!(reduce_sum(&b, 1).data(), &[3.0, 1.0, -1.0]);
        assert_eq!(reduce_max(&b, 0).data(), &[5.0, 4.0]);
        assert_eq!(reduce_max(&b, 1).data(), &[2.0, 4.0, 5.0]);
        assert_eq!(reduce_min(&b, 0).data(), &[-3.0, -6.0]);
        assert_eq!(reduce_min(&b, 1).shape(), &[3]);
        assert_eq!(reduce_min(&b, 1).data(), &[1.0, -3.0, -6.0]);
    }

    #[test]
    fn middle_axis_of_3d_and_to_rank0() {
        let b = Blk::from_vec(vec![2, 3, 2], (0..12).collect::<Vec<i32>>());
        let s = reduce_sum(&b, 1);
        assert_eq!(s.shape(), &[2, 2]);
        assert_eq!(s.data(), &[6, 9, 24, 27]);
        let v = Blk::from_vec(vec![4], vec![1u32, 2, 3, 4]);
        let total = reduce_sum(&v, 0);
        assert!(total.shape().is_empty());
        assert_eq!(total.into_scalar(), 10);
    }

    #[test]
    fn half_sums_accumulate_in_f32() {
        // 2048 + 1 + 1 + ... in f16 would stay at 2048 (spacing 2); f32 accumulation does not.
        let mut v = vec![f16::from_f32(2048.0)];
        v.extend(std::iter::repeat_n(f16::ONE, 8));
        let b = Blk::from_vec(vec![9], v);
        assert_eq!(reduce_sum(&b, 0).into_scalar(), f16::from_f32(2056.0));
    }

    #[test]
    fn mask_reductions_are_any_and_all() {
        let m = Blk::from_vec(vec![2, 2], vec![true, false, false, false]);
        assert_eq!(reduce_max(&m, 1).data(), &[true, false]);
        assert_eq!(reduce_min(&m, 0).data(), &[false, false]);
    }

    #[test]
    fn integer_sums_wrap_and_empty_axes() {
        let b = Blk::from_vec(vec![2], vec![i32::MAX, 1]);
        assert_eq!(reduce_sum(&b, 0).into_scalar(), i32::MIN);
        let e = Blk::from_vec(vec![2, 0], Vec::<f32>::new());
        assert_eq!(reduce_sum(&e, 1).data(), &[0.0, 0.0]);
        assert_eq!(reduce_max(&e, 1).data(), &[f32::NEG_INFINITY; 2]);
    }
}
