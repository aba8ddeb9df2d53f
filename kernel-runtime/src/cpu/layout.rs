//! Block shape changes: [`expand_dims`], [`trans`], [`reshape`].

use super::blk::Blk;
use super::broadcast::{internal, numel};
use super::elem::Elem;

/// `b` with a new axis of size 1 inserted at `axis` (Triton's `x[:, None]` is
/// `expand_dims(x, 1)`, `x[None, :]` is `expand_dims(x, 0)`).
///
/// # Panics
/// When `axis > rank` (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, expand_dims};
/// assert_eq!(expand_dims(&arange(0, 4), 1).shape(), &[4, 1]);
/// assert_eq!(expand_dims(&arange(0, 4), 0).shape(), &[1, 4]);
/// ```
pub fn expand_dims<T: Elem>(b: &Blk<T>, axis: usize) -> Blk<T> {
    if axis > b.shape.len() {
        internal(format!("expand_dims: axis {axis} out of range for shape {:?}", b.shape));
    }
    let mut shape = b.shape.clone();
    shape.insert(axis, 1);
    Blk { shape, data: b.data.clone() }
}

/// The transpose of a 2-D block.
///
/// # Panics
/// When `b` is not 2-D (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{trans, Blk};
/// let b = Blk::from_vec(vec![2, 3], vec![1, 2, 3, 4, 5, 6]);
/// let t = trans(&b);
/// assert_eq!(t.shape(), &[3, 2]);
/// assert_eq!(t.data(), &[1, 4, 2, 5, 3, 6]);
/// ```
pub fn trans<T: Elem>(b: &Blk<T>) -> Blk<T> {
    let &[rows, cols] = b.shape.as_slice() else {
        internal(format!("trans: expected a 2-D block, found shape {:?}", b.shape));
    };
    let mut data = Vec::with_capacity(rows * cols);
    for c in 0..cols {
        data.extend((0..rows).map(|r| b.data[r * cols + c]));
    }
    Blk { shape: vec![cols, rows], data }
}

/// `b` with a new shape of the same number of elements (row-major order kept).
///
/// # Panics
/// When the element counts differ (an internal error, see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{arange, reshape};
/// let r = reshape(&arange(0, 6), &[2, 3]);
/// assert_eq!(r.shape(), &[2, 3]);
/// assert_eq!(r.data(), &[0, 1, 2, 3, 4, 5]);
/// ```
pub fn reshape<T: Elem>(b: &Blk<T>, shape: &[usize]) -> Blk<T> {
    if numel(shape) != b.data.len() {
        internal(format!("reshape: cannot reshape {:?} to {shape:?}", b.shape));
    }
    Blk { shape: shape.to_vec(), data: b.data.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_and_trans() {
        let s = Blk::scalar(1u32);
        assert_eq!(expand_dims(&s, 0).shape(), &[1]);
        let b = Blk::from_vec(vec![1, 3], vec![1, 2, 3]);
        assert_eq!(trans(&b).shape(), &[3, 1]);
        assert_eq!(trans(&trans(&b)), b);
        assert_eq!(reshape(&b, &[3]).shape(), &[3]);
        assert_eq!(reshape(&Blk::from_vec(vec![1], vec![4i32]), &[]).into_scalar(), 4);
    }

    #[test]
    #[should_panic(expected = "expected a 2-D block")]
    fn trans_of_1d_is_internal() {
        trans(&Blk::from_vec(vec![3], vec![1, 2, 3]));
    }
}
