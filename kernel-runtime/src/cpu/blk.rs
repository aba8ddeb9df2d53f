//! [`Blk`], a block value of one program instance.

use super::broadcast::{internal, numel};
use super::elem::Elem;

/// A block: a concrete shape and its elements in row-major order. Rank 0 is a
/// scalar.
///
/// ```
/// use kernel_runtime::__private::cpu::Blk;
/// let b = Blk::from_vec(vec![2, 2], vec![1, 2, 3, 4]);
/// assert_eq!(b.shape(), &[2, 2]);
/// assert_eq!(b.data(), &[1, 2, 3, 4]);
/// assert_eq!(Blk::scalar(7i32).into_scalar(), 7);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Blk<T> {
    pub(crate) shape: Vec<usize>,
    pub(crate) data: Vec<T>,
}

impl<T: Elem> Blk<T> {
    /// A rank-0 block.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Blk;
    /// assert!(Blk::scalar(1.0f32).shape().is_empty());
    /// ```
    pub fn scalar(v: T) -> Self {
        Blk { shape: Vec::new(), data: vec![v] }
    }

    /// A block of `shape` holding `data` in row-major order.
    ///
    /// # Panics
    /// When `data.len()` differs from the product of `shape`: generated code
    /// never does this, so it is an internal error, which `launch_cpu` turns
    /// into [`KernelError::Internal`](super::KernelError::Internal).
    /// [`Blk::try_from_vec`] is the checked form.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Blk;
    /// assert_eq!(Blk::from_vec(vec![3], vec![0u32; 3]).data().len(), 3);
    /// ```
    pub fn from_vec(shape: impl Into<Vec<usize>>, data: Vec<T>) -> Self {
        let shape = shape.into();
        match Self::try_from_vec(shape, data) {
            Some(b) => b,
            None => internal("Blk::from_vec: data length does not match the shape".to_string()),
        }
    }

    /// Like [`Blk::from_vec`], but `None` on a length mismatch.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::Blk;
    /// assert!(Blk::try_from_vec(vec![2, 2], vec![0i32; 3]).is_none());
    /// ```
    pub fn try_from_vec(shape: impl Into<Vec<usize>>, data: Vec<T>) -> Option<Self> {
        let shape = shape.into();
        (numel(&shape) == data.len()).then_some(Blk { shape, data })
    }

    /// The shape (empty for a scalar).
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::full;
    /// assert_eq!(full(&[4, 1], 0i32).shape(), &[4, 1]);
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The elements in row-major order.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::arange;
    /// assert_eq!(arange(0, 3).data(), &[0, 1, 2]);
    /// ```
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// The elements, consuming the block.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::arange;
    /// assert_eq!(arange(1, 3).into_data(), vec![1, 2]);
    /// ```
    pub fn into_data(self) -> Vec<T> {
        self.data
    }

    /// Number of elements.
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::full;
    /// assert_eq!(full(&[2, 3], true).numel(), 6);
    /// ```
    pub fn numel(&self) -> usize {
        self.data.len()
    }

    /// The single element of a block with one element (normally rank 0).
    ///
    /// # Panics
    /// When the block does not have exactly one element (an internal error,
    /// see [`Blk::from_vec`]).
    ///
    /// ```
    /// use kernel_runtime::__private::cpu::{full, Blk};
    /// assert_eq!(Blk::scalar(3u32).into_scalar(), 3);
    /// assert_eq!(full(&[1, 1], 5i64).into_scalar(), 5);
    /// ```
    pub fn into_scalar(self) -> T {
        match self.data.as_slice() {
            [v] => *v,
            _ => internal(format!(
                "into_scalar on a block of shape {:?} ({} elements)",
                self.shape,
                self.data.len()
            )),
        }
    }
}
