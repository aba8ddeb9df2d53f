//! NumPy broadcasting: shape rules, the strided iteration every block
//! operation uses, and [`broadcast_to`].

use std::convert::Infallible;

use super::blk::Blk;
use super::elem::Elem;

/// Prefix of the panic message of an internal error; `launch_cpu` strips it
/// when turning the panic into `KernelError::Internal`.
pub(crate) const INTERNAL_PREFIX: &str = "kernel-runtime internal error: ";

/// Reports a broken invariant of generated code (shapes are checked by the
/// macro, so a mismatch here is a bug). Infallible block operations panic;
/// `launch_cpu` catches the panic and returns `KernelError::Internal`.
#[cold]
#[track_caller]
pub(crate) fn internal(message: String) -> ! {
    panic!("{INTERNAL_PREFIX}{message}")
}

/// Product of a shape (1 for rank 0).
pub(crate) fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The broadcast shape of several shapes, or `None` if they are incompatible.
pub(crate) fn broadcast_shapes(shapes: &[&[usize]]) -> Option<Vec<usize>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1usize; rank];
    for s in shapes {
        let pad = rank - s.len();
        for (o, &d) in out[pad..].iter_mut().zip(s.iter()) {
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return None;
            }
        }
    }
    Some(out)
}

/// Like [`broadcast_shapes`], but an internal error on mismatch.
pub(crate) fn broadcast_shapes_or_internal(op: &str, shapes: &[&[usize]]) -> Vec<usize> {
    match broadcast_shapes(shapes) {
        Some(s) => s,
        None => internal(format!("{op}: block shapes {shapes:?} do not broadcast together")),
    }
}

/// Element strides of a row-major block of `shape` read as a block of `out`
/// (right-aligned; 0 along broadcast and missing dimensions).
pub(crate) fn bcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let mut strides = vec![0usize; out.len()];
    let pad = out.len() - shape.len();
    let mut step = 1usize;
    for (d, &n) in shape.iter().enumerate().rev() {
        if n != 1 {
            strides[pad + d] = step;
        }
        step *= n;
    }
    strides
}

/// Calls `f` with the offsets into each of `N` operands for every element of
/// `out`, in row-major order; `strides[i]` comes from [`bcast_strides`].
/// Stops at the first error.
pub(crate) fn try_for_each_bcast<const N: usize, E>(
    out: &[usize],
    strides: &[Vec<usize>; N],
    mut f: impl FnMut([usize; N]) -> Result<(), E>,
) -> Result<(), E> {
    let total = numel(out);
    if total == 0 {
        return Ok(());
    }
    let rank = out.len();
    if rank == 0 {
        return f([0; N]);
    }
    let last = out[rank - 1];
    let inner: [usize; N] = std::array::from_fn(|i| strides[i][rank - 1]);
    let mut idx = vec![0usize; rank - 1];
    let mut base = [0usize; N];
    for _ in 0..total / last {
        let mut offs = base;
        for _ in 0..last {
            f(offs)?;
            for i in 0..N {
                offs[i] += inner[i];
            }
        }
        // Advance the odometer over the outer dimensions.
        for d in (0..rank - 1).rev() {
            idx[d] += 1;
            for i in 0..N {
                base[i] += strides[i][d];
            }
            if idx[d] < out[d] {
                break;
            }
            for i in 0..N {
                base[i] -= strides[i][d] * out[d];
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

/// Infallible [`try_for_each_bcast`].
pub(crate) fn for_each_bcast<const N: usize>(
    out: &[usize],
    strides: &[Vec<usize>; N],
    mut f: impl FnMut([usize; N]),
) {
    let r: Result<(), Infallible> = try_for_each_bcast(out, strides, |o| {
        f(o);
        Ok(())
    });
    let Ok(()) = r;
}

/// Calls `f` with the storage offset of every element of a strided view of
/// `shape`, in row-major order (used by `Tensor`).
pub(crate) fn for_each_strided(shape: &[usize], strides: &[usize], mut f: impl FnMut(usize)) {
    for_each_bcast(shape, &[strides.to_vec()], |[i]| f(i));
}

/// `b` broadcast to `shape` (NumPy rules), materialized.
///
/// # Panics
/// When `b`'s shape does not broadcast to `shape` (an internal error, see
/// [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, broadcast_to, expand_dims};
/// let col = expand_dims(&arange(0, 2), 1); // [2, 1]
/// let b = broadcast_to(&col, &[2, 3]);
/// assert_eq!(b.data(), &[0, 0, 0, 1, 1, 1]);
/// ```
pub fn broadcast_to<T: Elem>(b: &Blk<T>, shape: &[usize]) -> Blk<T> {
    if b.shape() == shape {
        return b.clone();
    }
    let out = broadcast_shapes_or_internal("broadcast_to", &[b.shape(), shape]);
    if out != shape {
        internal(format!("broadcast_to: cannot broadcast shape {:?} to {shape:?}", b.shape()));
    }
    let strides = [bcast_strides(b.shape(), &out)];
    let mut data = Vec::with_capacity(numel(&out));
    for_each_bcast(&out, &strides, |[i]| data.push(b.data[i]));
    Blk { shape: out, data }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_rules() {
        assert_eq!(broadcast_shapes(&[&[4, 1], &[1, 3]]), Some(vec![4, 3]));
        assert_eq!(broadcast_shapes(&[&[], &[2, 3]]), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[&[3], &[2, 3]]), Some(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[&[2], &[3]]), None);
        assert_eq!(broadcast_shapes(&[&[0, 1], &[1, 5]]), Some(vec![0, 5]));
        assert_eq!(bcast_strides(&[4, 1], &[4, 3]), vec![1, 0]);
        assert_eq!(bcast_strides(&[3], &[2, 3]), vec![0, 1]);
        assert_eq!(bcast_strides(&[2, 3, 4], &[2, 3, 4]), vec![12, 4, 1]);
    }

    #[test]
    fn iteration_order_is_row_major() {
        let out = [2, 2, 3];
        let s = [bcast_strides(&[2, 1, 3], &out), bcast_strides(&[2, 1], &out)];
        let mut seen = Vec::new();
        for_each_bcast(&out, &s, |[i, j]| seen.push((i, j)));
        let expected: Vec<(usize, usize)> = (0..2)
            .flat_map(|a| (0..2).flat_map(move |b| (0..3).map(move |c| (a * 3 + c, b))))
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn broadcast_to_rank0_and_3d() {
        let s = Blk::scalar(9i32);
        assert_eq!(broadcast_to(&s, &[2, 2]).data(), &[9; 4]);
        let b = Blk::from_vec(vec![1, 2, 1], vec![1, 2]);
        let c = broadcast_to(&b, &[2, 2, 2]);
        assert_eq!(c.shape(), &[2, 2, 2]);
        assert_eq!(c.data(), &[1, 1, 2, 2, 1, 1, 2, 2]);
        assert_eq!(broadcast_to(&s, &[0, 3]).numel(), 0);
    }

    #[test]
    #[should_panic(expected = "kernel-runtime internal error: broadcast_to")]
    fn broadcast_to_incompatible_is_internal() {
        broadcast_to(&Blk::from_vec(vec![2], vec![1, 2]), &[3]);
    }
}
