//! Block construction and elementwise operations: [`arange`], [`full`],
//! [`map1`], [`map2`], [`try_map1`], [`try_map2`], [`select`].
//!
//! Operands broadcast with NumPy rules. Shapes are checked by `#[kernel]`, so
//! a mismatch here is an internal error (see [`Blk::from_vec`]).

use super::blk::Blk;
use super::broadcast::{bcast_strides, broadcast_shapes_or_internal, for_each_bcast, numel, try_for_each_bcast};
use super::elem::Elem;
use super::error::{ArithError, KernelError, Site};

/// The 1-D block `[start, start + 1, ..., end - 1]` (empty when `end <= start`).
///
/// ```
/// use kernel_runtime::__private::cpu::arange;
/// assert_eq!(arange(2, 5).data(), &[2, 3, 4]);
/// assert_eq!(arange(0, 4).shape(), &[4]);
/// ```
pub fn arange(start: i32, end: i32) -> Blk<i32> {
    let data: Vec<i32> = (start..end).collect();
    Blk { shape: vec![data.len()], data }
}

/// A block of `shape` filled with `v` (Triton's `full` and `zeros`).
///
/// ```
/// use kernel_runtime::__private::cpu::full;
/// let z = full(&[2, 3], 0.0f32);
/// assert_eq!(z.shape(), &[2, 3]);
/// assert!(z.data().iter().all(|&v| v == 0.0));
/// ```
pub fn full<T: Elem>(shape: &[usize], v: T) -> Blk<T> {
    Blk { shape: shape.to_vec(), data: vec![v; numel(shape)] }
}

/// `f` applied to every element.
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, map1};
/// assert_eq!(map1(&arange(0, 3), |x| x * 2).data(), &[0, 2, 4]);
/// ```
pub fn map1<A: Elem, R: Elem>(a: &Blk<A>, mut f: impl FnMut(A) -> R) -> Blk<R> {
    Blk { shape: a.shape.clone(), data: a.data.iter().map(|&x| f(x)).collect() }
}

/// `f` applied to every element; the first error is returned, located at `site`.
///
/// # Errors
/// The first [`ArithError`] of `f`, as a [`KernelError`] at `site`.
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, try_map1, Num, Site};
/// let site = Site { kernel: "k", line: 1, column: 1 };
/// let ok = try_map1(&arange(1, 3), |x| Num::div(6, x), &site).unwrap();
/// assert_eq!(ok.data(), &[6, 3]);
/// assert!(try_map1(&arange(0, 3), |x| Num::div(6, x), &site).is_err());
/// ```
pub fn try_map1<A: Elem, R: Elem>(
    a: &Blk<A>,
    mut f: impl FnMut(A) -> Result<R, ArithError>,
    site: &Site,
) -> Result<Blk<R>, KernelError> {
    let data = a.data.iter().map(|&x| f(x)).collect::<Result<Vec<R>, ArithError>>();
    match data {
        Ok(data) => Ok(Blk { shape: a.shape.clone(), data }),
        Err(e) => Err(e.at(site)),
    }
}

/// `f` applied to every pair of elements of `a` and `b` broadcast together.
///
/// # Panics
/// When the shapes do not broadcast (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, expand_dims, map2, Num};
/// let rows = expand_dims(&arange(0, 2), 1);   // [2, 1]
/// let cols = expand_dims(&arange(0, 3), 0);   // [1, 3]
/// let offs = map2(&rows, &cols, |r, c| Num::add(Num::mul(r, 10), c));
/// assert_eq!(offs.shape(), &[2, 3]);
/// assert_eq!(offs.data(), &[0, 1, 2, 10, 11, 12]);
/// ```
pub fn map2<A: Elem, B: Elem, R: Elem>(
    a: &Blk<A>,
    b: &Blk<B>,
    mut f: impl FnMut(A, B) -> R,
) -> Blk<R> {
    if a.shape == b.shape {
        let data = a.data.iter().zip(&b.data).map(|(&x, &y)| f(x, y)).collect();
        return Blk { shape: a.shape.clone(), data };
    }
    let out = broadcast_shapes_or_internal("map2", &[&a.shape, &b.shape]);
    let strides = [bcast_strides(&a.shape, &out), bcast_strides(&b.shape, &out)];
    let mut data = Vec::with_capacity(numel(&out));
    for_each_bcast(&out, &strides, |[i, j]| data.push(f(a.data[i], b.data[j])));
    Blk { shape: out, data }
}

/// Like [`map2`] for fallible operations (integer division and remainder).
///
/// # Errors
/// The first [`ArithError`] of `f` in row-major order, as a [`KernelError`] at `site`.
///
/// # Panics
/// When the shapes do not broadcast (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, full, try_map2, KernelError, Num, Site};
/// let site = Site { kernel: "k", line: 7, column: 3 };
/// let err = try_map2(&full(&[3], 1i32), &arange(-1, 2), Num::div, &site).unwrap_err();
/// assert_eq!(err, KernelError::DivisionByZero { kernel: "k", line: 7, column: 3 });
/// ```
pub fn try_map2<A: Elem, B: Elem, R: Elem>(
    a: &Blk<A>,
    b: &Blk<B>,
    mut f: impl FnMut(A, B) -> Result<R, ArithError>,
    site: &Site,
) -> Result<Blk<R>, KernelError> {
    let out = broadcast_shapes_or_internal("try_map2", &[&a.shape, &b.shape]);
    let strides = [bcast_strides(&a.shape, &out), bcast_strides(&b.shape, &out)];
    let mut data = Vec::with_capacity(numel(&out));
    try_for_each_bcast(&out, &strides, |[i, j]| {
        data.push(f(a.data[i], b.data[j])?);
        Ok(())
    })
    .map_err(|e: ArithError| e.at(site))?;
    Ok(Blk { shape: out, data })
}

/// `x` where `cond` holds, else `y` (Triton's `where`), all three broadcast
/// together.
///
/// # Panics
/// When the shapes do not broadcast (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{select, Blk};
/// let c = Blk::from_vec(vec![3], vec![true, false, true]);
/// let r = select(&c, &Blk::from_vec(vec![3], vec![1, 2, 3]), &Blk::scalar(0));
/// assert_eq!(r.data(), &[1, 0, 3]);
/// ```
pub fn select<T: Elem>(cond: &Blk<bool>, x: &Blk<T>, y: &Blk<T>) -> Blk<T> {
    map3(cond, x, y, |c, a, b| if c { a } else { b })
}

/// `f` applied elementwise to three blocks broadcast together (`fma`, `clamp`).
///
/// # Panics
/// When the shapes do not broadcast (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{map3, Blk};
/// let a = Blk::from_vec(vec![2, 1], vec![1, 2]);
/// let r = map3(&a, &Blk::from_vec(vec![1, 2], vec![10, 20]), &Blk::scalar(100), |x, y, z| x * y + z);
/// assert_eq!(r.data(), &[110, 120, 120, 140]);
/// ```
pub fn map3<A: Elem, B: Elem, C: Elem, R: Elem>(
    a: &Blk<A>,
    b: &Blk<B>,
    c: &Blk<C>,
    mut f: impl FnMut(A, B, C) -> R,
) -> Blk<R> {
    let out = broadcast_shapes_or_internal("map3", &[&a.shape, &b.shape, &c.shape]);
    let strides = [bcast_strides(&a.shape, &out), bcast_strides(&b.shape, &out), bcast_strides(&c.shape, &out)];
    let mut data = Vec::with_capacity(numel(&out));
    for_each_bcast(&out, &strides, |[i, j, l]| data.push(f(a.data[i], b.data[j], c.data[l])));
    Blk { shape: out, data }
}

#[cfg(test)]
mod tests {
    use super::super::layout::expand_dims;
    use super::super::num::Num;
    use super::*;

    #[test]
    fn outer_broadcast_m1_by_1n() {
        let m = expand_dims(&arange(0, 3), 1);
        let n = expand_dims(&arange(0, 4), 0);
        let r = map2(&m, &n, |a, b| a * 100 + b);
        assert_eq!(r.shape(), &[3, 4]);
        for i in 0..3 {
            for j in 0..4 {
                assert_eq!(r.data()[i * 4 + j], (i * 100 + j) as i32);
            }
        }
        // And the other way round.
        let r2 = map2(&n, &m, |b, a| a * 100 + b);
        assert_eq!(r2, r);
    }

    #[test]
    fn rank0_broadcasts_against_anything() {
        let s = Blk::scalar(10i32);
        let v = arange(0, 3);
        assert_eq!(map2(&s, &v, Num::sub).data(), &[10, 9, 8]);
        assert_eq!(map2(&v, &s, Num::sub).data(), &[-10, -9, -8]);
        let both = map2(&s, &Blk::scalar(2i32), Num::mul);
        assert!(both.shape().is_empty());
        assert_eq!(both.into_scalar(), 20);
        // Lower rank against higher rank: [3] with [2, 3].
        let m = Blk::from_vec(vec![2, 3], vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(map2(&v, &m, Num::add).data(), &[0, 1, 2, 1, 2, 3]);
    }

    #[test]
    fn map1_keeps_shape_and_full_fills() {
        let b = map1(&full(&[2, 2], 3u32), |x| x as f32 * 0.5);
        assert_eq!(b.shape(), &[2, 2]);
        assert_eq!(b.data(), &[1.5; 4]);
        assert_eq!(arange(5, 5).numel(), 0);
        assert_eq!(arange(5, 2).shape(), &[0]);
    }

    #[test]
    fn division_by_zero_carries_the_site() {
        let site = Site { kernel: "div_kernel", line: 9, column: 21 };
        let a = expand_dims(&arange(0, 2), 1);
        let b = expand_dims(&arange(0, 2), 0);
        let err = try_map2(&a, &b, Num::rem, &site).unwrap_err();
        assert_eq!(err.to_string(), "integer division by zero in kernel `div_kernel` at line 9, column 21");
        let ok = try_map2(&a, &full(&[1, 2], 2), Num::div, &site).unwrap();
        assert_eq!(ok.shape(), &[2, 2]);
        assert_eq!(ok.data(), &[0, 0, 0, 0]);
        assert_eq!(try_map1(&arange(0, 1), |x| Num::div(1i32, x), &site).unwrap_err(), err);
    }

    #[test]
    fn select_broadcasts_three_ways() {
        let cond = expand_dims(&map1(&arange(0, 2), |i| i == 1), 1); // [2, 1]
        let x = expand_dims(&arange(0, 3), 0); // [1, 3]
        let r = select(&cond, &x, &Blk::scalar(-1));
        assert_eq!(r.shape(), &[2, 3]);
        assert_eq!(r.data(), &[-1, -1, -1, 0, 1, 2]);
    }

    #[test]
    #[should_panic(expected = "do not broadcast")]
    fn mismatched_shapes_are_internal_errors() {
        map2(&arange(0, 2), &arange(0, 3), Num::add);
    }
}
