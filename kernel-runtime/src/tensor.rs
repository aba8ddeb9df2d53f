//! [`Tensor`]: a strided view of device memory shared by all its views.

#[cfg(feature = "dlpack")]
pub(crate) mod dlpack;
mod view;

use std::fmt;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, StandardNormal, Uniform};

use crate::cpu::for_each_strided;
#[cfg(feature = "cuda")]
use crate::cuda::memory::DeviceBuffer;
use crate::device::Device;
use crate::dtype::{DType, DTypeKind};
use crate::error::{DeviceError, LaunchError, TensorError};

/// An n-dimensional array of `T` on a [`Device`]: shared storage plus a
/// shape, strides (in elements) and a storage offset.
///
/// Cloning, [`transpose`](Tensor::transpose), [`t`](Tensor::t) and
/// [`narrow`](Tensor::narrow) make *views*: they share storage, so a kernel
/// writing through one view is seen by all. On the CPU each element is an
/// atomic cell (relaxed loads and stores compile to plain moves), which is
/// what lets many program instances write one tensor concurrently without
/// `unsafe`. On a GPU the storage is one device allocation; constructors
/// upload from the host and [`to_vec`](Tensor::to_vec) downloads (waiting for
/// the device's queued work first).
///
/// ```
/// use kernel_runtime::{Device, Tensor};
/// let dev = Device::cpu();
/// let a = Tensor::from_vec(&dev, &[2, 3], vec![1, 2, 3, 4, 5, 6i32]).unwrap();
/// assert_eq!(a.shape(), &[2, 3]);
/// assert_eq!(a.strides(), &[3, 1]);
/// let at = a.t();
/// assert_eq!(at.shape(), &[3, 2]);
/// assert!(!at.is_contiguous());
/// assert_eq!(at.to_vec(), vec![1, 4, 2, 5, 3, 6]);
/// ```
pub struct Tensor<T: DType> {
    device: Device,
    storage: Buffer<T>,
    shape: Vec<usize>,
    strides: Vec<usize>,
    offset: usize,
}

/// The storage of a tensor, shared by its views.
enum Buffer<T: DType> {
    /// One atomic cell per element, in host memory.
    Cpu(Arc<HostCells<T>>),
    /// A device allocation.
    #[cfg(feature = "cuda")]
    Cuda(Arc<DeviceBuffer<T>>),
}

/// The host memory of a tensor: cells this crate allocated (a boxed slice, so that they are
/// allocated once, fallibly, and never copied into the `Arc`), or memory the caller lent
/// (`view`), seen as cells.
enum HostCells<T: DType> {
    /// Allocated by this crate.
    Owned(Box<[T::Atomic]>),
    /// `len` elements at `ptr`, valid and aligned for as long as this value lives (the
    /// constructors' contracts); `owner`, when there is one, keeps them alive and is dropped
    /// with this value.
    Foreign {
        ptr: std::ptr::NonNull<T::Atomic>,
        len: usize,
        #[allow(dead_code)] // held for its drop
        owner: Option<Box<dyn std::any::Any + Send + Sync>>,
    },
}

// SAFETY: `Foreign` is a shared slice of atomic cells (which are `Send + Sync`) plus an owner
// that is `Send + Sync` and never accessed; `Owned` is `Send + Sync` already.
unsafe impl<T: DType> Send for HostCells<T> {}
// SAFETY: as above.
unsafe impl<T: DType> Sync for HostCells<T> {}

impl<T: DType> std::ops::Deref for HostCells<T> {
    type Target = [T::Atomic];

    fn deref(&self) -> &[T::Atomic] {
        match self {
            HostCells::Owned(c) => c,
            // SAFETY: the constructors' contracts: `len` cells at `ptr`, valid and aligned
            // while `self` lives, accessed only as atomics (this crate's views).
            HostCells::Foreign { ptr, len, .. } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl<T: DType> Clone for Buffer<T> {
    fn clone(&self) -> Self {
        match self {
            Buffer::Cpu(c) => Buffer::Cpu(Arc::clone(c)),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => Buffer::Cuda(Arc::clone(b)),
        }
    }
}

/// The storage of a tensor as a kernel argument sees it.
pub(crate) enum StorageRef<'a, T: DType> {
    /// Host cells.
    Cpu(&'a [T::Atomic]),
    /// A device allocation.
    #[cfg(feature = "cuda")]
    Cuda(&'a DeviceBuffer<T>),
}

impl<T: DType> Clone for Tensor<T> {
    /// Another view of the same storage.
    fn clone(&self) -> Self {
        Tensor {
            device: self.device.clone(),
            storage: self.storage.clone(),
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: self.offset,
        }
    }
}

impl<T: DType> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &T::KIND)
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .field("offset", &self.offset)
            .field("device", &format_args!("{}", self.device))
            .finish()
    }
}

/// Row-major strides of `shape`.
fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut step = 1usize;
    for (s, &n) in strides.iter_mut().zip(shape).rev() {
        *s = step;
        step = step.saturating_mul(n);
    }
    strides
}

/// Number of elements of a tensor of `T` with `shape`, or `ShapeOverflow` when the count
/// overflows `usize` or the bytes exceed `isize::MAX` (the most any allocation can hold).
fn checked_numel<T: DType>(shape: &[usize]) -> Result<usize, TensorError> {
    let elem_bytes = size_of::<T>();
    shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|&n| n.checked_mul(elem_bytes).is_some_and(|b| b <= isize::MAX as usize))
        .ok_or_else(|| TensorError::ShapeOverflow { shape: shape.to_vec(), elem_bytes })
}

/// An empty vector with room for exactly `n` elements, or `OutOfMemory` naming `place` when
/// the allocator refuses (never an abort).
fn try_vec<X>(n: usize, place: &str) -> Result<Vec<X>, TensorError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| TensorError::OutOfMemory {
        bytes: n.saturating_mul(size_of::<X>()),
        device: place.to_string(),
        reason: e.to_string(),
    })?;
    Ok(v)
}

/// Storage on `device` holding the `n` elements of `data` (which yields exactly `n`). Every
/// allocation is fallible: the host cells or staging copy through [`try_vec`], the device
/// memory through the driver (`CUDA_ERROR_OUT_OF_MEMORY` becomes `OutOfMemory`).
fn store_on<T: DType>(device: &Device, n: usize, data: impl Iterator<Item = T>) -> Result<Buffer<T>, TensorError> {
    #[cfg(feature = "cuda")]
    if let Some(d) = device.cuda_device() {
        let mut host = try_vec::<T>(n, "host memory")?;
        host.extend(data.take(n));
        let buf = DeviceBuffer::upload(d, &host).map_err(|e| out_of_memory::<T>(device, n, e))?;
        return Ok(Buffer::Cuda(Arc::new(buf)));
    }
    let _ = device;
    let mut cells = try_vec::<T::Atomic>(n, "cpu")?;
    cells.extend(data.take(n).map(T::new_atomic));
    Ok(Buffer::Cpu(Arc::new(HostCells::Owned(cells.into_boxed_slice()))))
}

/// `OutOfMemory` for a device allocation of `n` elements that the driver refused for lack of
/// memory; any other device error unchanged.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
fn out_of_memory<T: DType>(device: &Device, n: usize, e: DeviceError) -> TensorError {
    match e {
        DeviceError::Driver { code, message, .. } if code == "CUDA_ERROR_OUT_OF_MEMORY" => TensorError::OutOfMemory {
            bytes: n.saturating_mul(size_of::<T>()),
            device: device.to_string(),
            reason: format!("{code}: {message}"),
        },
        e => TensorError::Device(e),
    }
}

/// The panic message of the infallible methods when the device fails.
fn device_failure(op: &str, e: &TensorError) -> ! {
    panic!("Tensor::{op}: {e} (use Tensor::try_{op} to handle this error)")
}

impl<T: DType> Tensor<T> {
    /// A contiguous tensor of `shape` holding `data` in row-major order.
    ///
    /// # Errors
    /// [`TensorError::ShapeMismatch`] when `data.len()` is not the product of
    /// `shape`; [`TensorError::ShapeOverflow`] when the shape has more elements
    /// than any allocation can hold; [`TensorError::OutOfMemory`] when the
    /// memory cannot be allocated; [`TensorError::Device`] when `device` is
    /// unusable. Never aborts or panics on a size.
    ///
    /// ```
    /// use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::cpu(), &[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    /// assert_eq!(t.numel(), 4);
    /// assert!(Tensor::from_vec(&Device::cpu(), &[3], vec![1.0f32]).is_err());
    /// ```
    pub fn from_vec(device: &Device, shape: &[usize], data: Vec<T>) -> Result<Self, TensorError> {
        let expected = checked_numel::<T>(shape)?;
        if expected != data.len() {
            return Err(TensorError::ShapeMismatch {
                shape: shape.to_vec(),
                expected,
                found: data.len(),
            });
        }
        Ok(Self::from_storage(device, shape, store_on(device, expected, data.into_iter())?))
    }

    /// A contiguous tensor of `shape` over `storage`.
    fn from_storage(device: &Device, shape: &[usize], storage: Buffer<T>) -> Self {
        Tensor { device: device.clone(), storage, shape: shape.to_vec(), strides: contiguous_strides(shape), offset: 0 }
    }

    /// A contiguous tensor of `shape` filled with `v`.
    ///
    /// # Errors
    /// As [`Tensor::from_vec`] (shape overflow, out of memory, unusable device).
    ///
    /// ```
    /// use kernel_runtime::{f16, Device, Tensor, TensorError};
    /// let t = Tensor::full(&Device::cpu(), &[2], f16::ONE).unwrap();
    /// assert_eq!(t.to_vec(), vec![f16::ONE; 2]);
    /// let err = Tensor::full(&Device::cpu(), &[1 << 62], 0.0f32).unwrap_err();
    /// assert!(matches!(err, TensorError::ShapeOverflow { .. }));
    /// ```
    pub fn full(device: &Device, shape: &[usize], v: T) -> Result<Self, TensorError> {
        let n = checked_numel::<T>(shape)?;
        Ok(Self::from_storage(device, shape, store_on(device, n, std::iter::repeat(v))?))
    }

    /// A contiguous tensor of `shape` filled with zeros.
    ///
    /// # Errors
    /// As [`Tensor::from_vec`] (shape overflow, out of memory, unusable device).
    ///
    /// ```
    /// use kernel_runtime::{Device, Tensor, TensorError};
    /// let t = Tensor::<i64>::zeros(&Device::cpu(), &[3]).unwrap();
    /// assert_eq!(t.to_vec(), vec![0, 0, 0]);
    /// let err = Tensor::<f32>::zeros(&Device::cpu(), &[1 << 62]).unwrap_err();
    /// assert!(matches!(err, TensorError::ShapeOverflow { .. }));
    /// ```
    pub fn zeros(device: &Device, shape: &[usize]) -> Result<Self, TensorError> {
        #[cfg(feature = "cuda")]
        if let Some(d) = device.cuda_device() {
            let n = checked_numel::<T>(shape)?;
            let buf = DeviceBuffer::zeros(d, n).map_err(|e| out_of_memory::<T>(device, n, e))?;
            return Ok(Self::from_storage(device, shape, Buffer::Cuda(Arc::new(buf))));
        }
        Self::full(device, shape, T::default())
    }

    /// Samples of the standard normal distribution N(0, 1), rounded to `T`
    /// (integers round to nearest), reproducible from `seed`. The samples are
    /// drawn on the host, so one seed gives the same tensor on every device.
    ///
    /// # Errors
    /// As [`Tensor::from_vec`] (shape overflow, out of memory, unusable device).
    ///
    /// ```
    /// use kernel_runtime::{f16, Device, Tensor};
    /// let a = Tensor::<f16>::randn(&Device::cpu(), &[64, 64], 0).unwrap();
    /// let b = Tensor::<f16>::randn(&Device::cpu(), &[64, 64], 0).unwrap();
    /// assert_eq!(a.to_vec(), b.to_vec());
    /// ```
    pub fn randn(device: &Device, shape: &[usize], seed: u64) -> Result<Self, TensorError> {
        let n = checked_numel::<T>(shape)?;
        let mut rng = StdRng::seed_from_u64(seed);
        let data = std::iter::repeat_with(|| T::from_f64(StandardNormal.sample(&mut rng)));
        Ok(Self::from_storage(device, shape, store_on(device, n, data)?))
    }

    /// Samples of the uniform distribution on `[lo, hi)`, rounded to `T`
    /// (so a narrow type may round up to `hi`), reproducible from `seed`.
    ///
    /// # Errors
    /// [`TensorError::InvalidRange`] unless `lo < hi` and `hi - lo` is finite;
    /// otherwise as [`Tensor::from_vec`].
    ///
    /// ```
    /// use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::rand_uniform(&Device::cpu(), &[100], -2.0, 2.0, 7).unwrap();
    /// assert!(t.to_vec().iter().all(|&v| (-2.0..2.0).contains(&v)));
    /// assert!(Tensor::<f32>::rand_uniform(&Device::cpu(), &[1], 1.0, 1.0, 7).is_err());
    /// ```
    pub fn rand_uniform(
        device: &Device,
        shape: &[usize],
        lo: f64,
        hi: f64,
        seed: u64,
    ) -> Result<Self, TensorError> {
        // `lo < hi` is false for NaN; a finite width rules out infinities.
        if !(lo < hi && (hi - lo).is_finite()) {
            return Err(TensorError::InvalidRange { lo, hi });
        }
        let n = checked_numel::<T>(shape)?;
        // Cannot fail: `lo < hi` and both are finite (checked above).
        let dist = Uniform::new(lo, hi).map_err(|_| TensorError::InvalidRange { lo, hi })?;
        let mut rng = StdRng::seed_from_u64(seed);
        let data = std::iter::repeat_with(|| T::from_f64(dist.sample(&mut rng)));
        Ok(Self::from_storage(device, shape, store_on(device, n, data)?))
    }

    /// The shape.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[4, 5]).unwrap();
    /// assert_eq!(t.shape(), &[4, 5]);
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The stride of dimension `dim`, in elements.
    ///
    /// # Panics
    /// When `dim` is not below the rank, like slice indexing.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[4, 5]).unwrap();
    /// assert_eq!((t.stride(0), t.stride(1)), (5, 1));
    /// assert_eq!((t.t().stride(0), t.t().stride(1)), (1, 5));
    /// ```
    pub fn stride(&self, dim: usize) -> usize {
        match self.strides.get(dim) {
            Some(&s) => s,
            None => panic!(
                "Tensor::stride: dimension {dim} is out of range for a tensor of rank {}",
                self.shape.len()
            ),
        }
    }

    /// All strides, in elements.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<u32>::zeros(&Device::cpu(), &[2, 3, 4]).unwrap();
    /// assert_eq!(t.strides(), &[12, 4, 1]);
    /// ```
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// Index of the first element in the shared storage.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<u32>::zeros(&Device::cpu(), &[4, 3]).unwrap();
    /// assert_eq!(t.narrow(0, 2, 2).unwrap().storage_offset(), 6);
    /// ```
    pub fn storage_offset(&self) -> usize {
        self.offset
    }

    /// Number of elements of this view.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// assert_eq!(Tensor::<f32>::zeros(&Device::cpu(), &[4, 5]).unwrap().numel(), 20);
    /// ```
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The element type.
    ///
    /// ```
    /// # use kernel_runtime::{bf16, Device, DTypeKind, Tensor};
    /// assert_eq!(Tensor::<bf16>::zeros(&Device::cpu(), &[1]).unwrap().dtype(), DTypeKind::BF16);
    /// ```
    pub fn dtype(&self) -> DTypeKind {
        T::KIND
    }

    /// The device holding the storage.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// assert!(Tensor::<f32>::zeros(&Device::cpu(), &[1]).unwrap().device().is_cpu());
    /// ```
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether the elements are in row-major order with no gaps (strides of
    /// size-1 dimensions do not matter).
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[4, 5]).unwrap();
    /// assert!(t.is_contiguous());
    /// assert!(!t.t().is_contiguous());
    /// ```
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n == 0 {
                return true;
            }
            if n != 1 && s != expected {
                return false;
            }
            expected *= n;
        }
        true
    }

    /// Checks that this view is contiguous ([`Tensor::is_contiguous`]), for a wrapper whose
    /// kernel reads or writes argument `arg` as a flat row-major array (`x_ptr + offsets`).
    ///
    /// A kernel's `Ptr<T>` parameter receives the view's first element (its storage offset
    /// included) and nothing else: a kernel indexing it as if it were contiguous reads the
    /// wrong elements of a transposed or column-narrowed view, with no error. A wrapper
    /// either passes the strides to the kernel ([`Tensor::strides_i32`]) or calls this.
    ///
    /// # Errors
    /// [`LaunchError::InvalidArgument`] naming `arg`, its shape and strides, and the fix.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let x = Tensor::<f32>::zeros(&Device::cpu(), &[2, 3]).unwrap();
    /// assert!(x.require_contiguous("x").is_ok());
    /// assert!(x.narrow(0, 1, 1).unwrap().require_contiguous("x").is_ok()); // an offset is fine
    /// let err = x.t().require_contiguous("x").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "invalid argument `x`: expected a contiguous tensor (call .contiguous() first), \
    ///      found shape [3, 2] with strides [1, 3]"
    /// );
    /// ```
    pub fn require_contiguous(&self, arg: &'static str) -> Result<(), LaunchError> {
        if self.is_contiguous() {
            return Ok(());
        }
        Err(LaunchError::InvalidArgument {
            arg,
            expected: "a contiguous tensor (call .contiguous() first)".into(),
            found: format!("shape {:?} with strides {:?}", self.shape, self.strides),
        })
    }

    /// The strides as `i32`, for passing to a kernel that indexes argument `arg` with them
    /// (`x_ptr + rows * stride_0 + cols * stride_1`), after checking that every element of the
    /// view lies at an offset from its first element that fits in `i32`, so that the kernel's
    /// `i32` index arithmetic cannot overflow on the view's elements. A dimension of size 0 or 1
    /// whose stride does not fit gets stride 0 (its only index is 0).
    ///
    /// # Errors
    /// [`LaunchError::InvalidArgument`] naming `arg` when the view's last element is more than
    /// `i32::MAX` elements past its first.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let x = Tensor::<f32>::zeros(&Device::cpu(), &[2, 3]).unwrap();
    /// assert_eq!(x.t().strides_i32("x").unwrap(), vec![1, 3]);
    /// ```
    pub fn strides_i32(&self, arg: &'static str) -> Result<Vec<i32>, LaunchError> {
        let last: u128 = if self.shape.contains(&0) {
            0
        } else {
            self.shape.iter().zip(&self.strides).map(|(&n, &s)| (n as u128 - 1) * s as u128).sum()
        };
        if last > i32::MAX as u128 {
            return Err(LaunchError::InvalidArgument {
                arg,
                expected: format!("a view whose elements lie within {} elements of its first (32-bit offsets)", i32::MAX),
                found: format!("shape {:?} with strides {:?}, last element at offset {last}", self.shape, self.strides),
            });
        }
        // Every stride of a dimension of size 2 or more is at most `last`.
        Ok(self.strides.iter().map(|&s| i32::try_from(s).unwrap_or(0)).collect())
    }

    /// The elements in logical row-major order (strides honoured).
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::cpu(), &[2, 2], vec![1u32, 2, 3, 4]).unwrap();
    /// assert_eq!(t.t().to_vec(), vec![1, 3, 2, 4]);
    /// ```
    ///
    /// # Panics
    /// When a GPU fails (a kernel queued earlier failed, say); use
    /// [`Tensor::try_to_vec`] to get the error instead.
    pub fn to_vec(&self) -> Vec<T> {
        self.try_to_vec().unwrap_or_else(|e| device_failure("to_vec", &e))
    }

    /// The elements in logical row-major order, or the device's error. On a
    /// GPU this waits for all work queued on the device (so the error of a
    /// failed kernel launched earlier surfaces here) and then downloads.
    ///
    /// # Errors
    /// [`TensorError::Device`] with the CUDA error.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::best(), &[2, 2], vec![1u32, 2, 3, 4]).unwrap();
    /// assert_eq!(t.t().try_to_vec().unwrap(), vec![1, 3, 2, 4]);
    /// ```
    pub fn try_to_vec(&self) -> Result<Vec<T>, TensorError> {
        let mut out = try_vec(self.numel(), "host memory")?;
        match &self.storage {
            Buffer::Cpu(cells) => {
                let base = &cells[self.offset.min(cells.len())..];
                for_each_strided(&self.shape, &self.strides, |i| out.push(T::load(&base[i])));
            }
            #[cfg(feature = "cuda")]
            Buffer::Cuda(buf) => {
                let span = buf.read(self.offset.min(buf.len()), self.span())?;
                for_each_strided(&self.shape, &self.strides, |i| out.push(span[i]));
            }
        }
        Ok(out)
    }

    /// Number of storage elements from the first element of this view to its
    /// last one, inclusive (0 for an empty view).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    fn span(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        1 + self.shape.iter().zip(&self.strides).map(|(&n, &s)| (n - 1) * s).sum::<usize>()
    }

    /// The elements converted to f64, in logical row-major order.
    ///
    /// ```
    /// # use kernel_runtime::{f16, Device, Tensor};
    /// let t = Tensor::full(&Device::cpu(), &[2], f16::from_f32(0.5)).unwrap();
    /// assert_eq!(t.to_f64_vec(), vec![0.5, 0.5]);
    /// ```
    ///
    /// # Panics
    /// As [`Tensor::to_vec`]; [`Tensor::try_to_f64_vec`] returns the error.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        self.try_to_f64_vec().unwrap_or_else(|e| device_failure("to_f64_vec", &e))
    }

    /// The elements converted to f64, in logical row-major order, or the
    /// device's error (see [`Tensor::try_to_vec`]).
    ///
    /// # Errors
    /// [`TensorError::Device`] with the CUDA error.
    ///
    /// ```
    /// # use kernel_runtime::{bf16, Device, Tensor};
    /// let t = Tensor::full(&Device::best(), &[3], bf16::from_f32(-2.0)).unwrap();
    /// assert_eq!(t.try_to_f64_vec().unwrap(), vec![-2.0; 3]);
    /// ```
    pub fn try_to_f64_vec(&self) -> Result<Vec<f64>, TensorError> {
        Ok(self.try_to_vec()?.into_iter().map(T::to_f64).collect())
    }

    /// A view with dimensions `d0` and `d1` swapped (no copy).
    ///
    /// # Errors
    /// [`TensorError::DimOutOfRange`] when either is not below the rank.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[2, 3, 4]).unwrap();
    /// let v = t.transpose(0, 2).unwrap();
    /// assert_eq!(v.shape(), &[4, 3, 2]);
    /// assert_eq!(v.strides(), &[1, 4, 12]);
    /// assert!(t.transpose(0, 3).is_err());
    /// ```
    pub fn transpose(&self, d0: usize, d1: usize) -> Result<Self, TensorError> {
        let rank = self.shape.len();
        for dim in [d0, d1] {
            if dim >= rank {
                return Err(TensorError::DimOutOfRange { dim, rank });
            }
        }
        let mut v = self.clone();
        v.shape.swap(d0, d1);
        v.strides.swap(d0, d1);
        Ok(v)
    }

    /// The transpose of the last two dimensions (a view; the tensor itself
    /// when the rank is below 2).
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[2, 3]).unwrap();
    /// assert_eq!(t.t().shape(), &[3, 2]);
    /// ```
    pub fn t(&self) -> Self {
        let mut v = self.clone();
        let rank = v.shape.len();
        if rank >= 2 {
            v.shape.swap(rank - 2, rank - 1);
            v.strides.swap(rank - 2, rank - 1);
        }
        v
    }

    /// The view of `len` indices of dimension `dim` starting at `start`.
    ///
    /// # Errors
    /// [`TensorError::DimOutOfRange`] for a bad `dim`;
    /// [`TensorError::NarrowOutOfRange`] for a range past the end of the dimension.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::cpu(), &[3, 2], vec![1, 2, 3, 4, 5, 6i32]).unwrap();
    /// assert_eq!(t.narrow(0, 1, 2).unwrap().to_vec(), vec![3, 4, 5, 6]);
    /// assert_eq!(t.narrow(1, 1, 1).unwrap().to_vec(), vec![2, 4, 6]);
    /// let err = t.narrow(0, 2, 2).unwrap_err();
    /// assert_eq!(err.to_string(), "narrow(dim 0, start 2, len 2) is out of range: dimension 0 has size 3");
    /// ```
    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> Result<Self, TensorError> {
        let rank = self.shape.len();
        let Some(&size) = self.shape.get(dim) else {
            return Err(TensorError::DimOutOfRange { dim, rank });
        };
        match start.checked_add(len) {
            Some(end) if end <= size => {}
            _ => return Err(TensorError::NarrowOutOfRange { dim, start, len, size }),
        }
        let mut v = self.clone();
        if len > 0 {
            v.offset += start * self.strides[dim];
        }
        v.shape[dim] = len;
        Ok(v)
    }

    /// A contiguous copy (a view of the same storage when already contiguous).
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::cpu(), &[2, 2], vec![1, 2, 3, 4i32]).unwrap();
    /// let c = t.t().contiguous();
    /// assert!(c.is_contiguous());
    /// assert_eq!(c.to_vec(), vec![1, 3, 2, 4]);
    /// ```
    ///
    /// # Panics
    /// When a GPU fails; [`Tensor::try_contiguous`] returns the error.
    pub fn contiguous(&self) -> Self {
        self.try_contiguous().unwrap_or_else(|e| device_failure("contiguous", &e))
    }

    /// A contiguous copy (a view of the same storage when already
    /// contiguous), or the device's error. On a GPU the copy goes through
    /// host memory.
    ///
    /// # Errors
    /// [`TensorError::Device`] with the CUDA error.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::best(), &[2, 2], vec![1, 2, 3, 4i64]).unwrap();
    /// assert_eq!(t.t().try_contiguous().unwrap().to_vec(), vec![1, 3, 2, 4]);
    /// ```
    pub fn try_contiguous(&self) -> Result<Self, TensorError> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copy_to(&self.device)
    }

    /// A copy with its own storage and the same shape, strides and offset (the whole storage
    /// is copied, so pointer arithmetic with this view's strides reaches the same elements).
    /// Autotuning runs candidate configs on such copies, never on the user's tensors.
    ///
    /// # Errors
    /// [`TensorError::Device`] when a device fails.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::cpu(), &[2, 2], vec![1, 2, 3, 4i32]).unwrap().t();
    /// let d = t.try_duplicate().unwrap();
    /// d.fill(0);
    /// assert_eq!(t.to_vec(), vec![1, 3, 2, 4]);
    /// assert_eq!((d.shape(), d.strides()), (t.shape(), t.strides()));
    /// ```
    pub fn try_duplicate(&self) -> Result<Self, TensorError> {
        let all = Tensor {
            device: self.device.clone(),
            storage: self.storage.clone(),
            shape: vec![match self.storage() {
                StorageRef::Cpu(c) => c.len(),
                #[cfg(feature = "cuda")]
                StorageRef::Cuda(b) => b.len(),
            }],
            strides: vec![1],
            offset: 0,
        };
        let copy = all.copy_to(&self.device)?;
        Ok(Tensor { storage: copy.storage, ..self.clone() })
    }

    /// A contiguous copy of this view on `device`.
    fn copy_to(&self, device: &Device) -> Result<Self, TensorError> {
        let data = self.try_to_vec()?;
        Ok(Self::from_storage(device, &self.shape, store_on(device, data.len(), data.into_iter())?))
    }

    /// This tensor on `device`, like PyTorch's `.to`: itself (a view sharing
    /// storage) when it is already there, else a contiguous copy (through host
    /// memory).
    ///
    /// # Errors
    /// [`TensorError::Device`] when a device fails.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::from_vec(&Device::cpu(), &[2], vec![1.5f32, 2.5]).unwrap();
    /// assert!(t.to_device(&Device::cpu()).unwrap().device().is_cpu());
    /// let there = t.to_device(&Device::best()).unwrap();
    /// assert_eq!(there.device(), &Device::best());
    /// assert_eq!(there.to_device(&Device::cpu()).unwrap().to_vec(), vec![1.5, 2.5]);
    /// ```
    pub fn to_device(&self, device: &Device) -> Result<Self, TensorError> {
        if *device == self.device {
            return Ok(self.clone());
        }
        self.copy_to(device)
    }

    /// Sets every element of this view to `v` (seen by all views sharing the storage).
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<i32>::zeros(&Device::cpu(), &[2, 2]).unwrap();
    /// t.narrow(1, 1, 1).unwrap().fill(7);
    /// assert_eq!(t.to_vec(), vec![0, 7, 0, 7]);
    /// ```
    ///
    /// # Panics
    /// When a GPU fails; [`Tensor::try_fill`] returns the error.
    pub fn fill(&self, v: T) {
        self.try_fill(v).unwrap_or_else(|e| device_failure("fill", &e))
    }

    /// Sets every element of this view to `v`, or returns the device's error.
    /// On a GPU the write is queued on the device's stream, after the work
    /// queued before it; a strided view is written by reading and rewriting
    /// the storage it spans.
    ///
    /// # Errors
    /// [`TensorError::Device`] with the CUDA error.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<u32>::zeros(&Device::best(), &[2, 3]).unwrap();
    /// t.narrow(1, 2, 1).unwrap().try_fill(5).unwrap();
    /// assert_eq!(t.to_vec(), vec![0, 0, 5, 0, 0, 5]);
    /// ```
    pub fn try_fill(&self, v: T) -> Result<(), TensorError> {
        match &self.storage {
            Buffer::Cpu(cells) => {
                let base = &cells[self.offset.min(cells.len())..];
                for_each_strided(&self.shape, &self.strides, |i| T::store(&base[i], v));
            }
            #[cfg(feature = "cuda")]
            Buffer::Cuda(buf) => {
                let start = self.offset.min(buf.len());
                if self.is_contiguous() {
                    buf.write(start, &vec![v; self.numel()])?;
                } else {
                    let mut span = buf.read(start, self.span())?;
                    for_each_strided(&self.shape, &self.strides, |i| span[i] = v);
                    buf.write(start, &span)?;
                }
            }
        }
        Ok(())
    }

    /// The cudarc allocation holding this tensor's storage (`None` on the
    /// CPU, and for memory viewed through a raw pointer or a cudarc view), for passing it
    /// to other CUDA libraries (cuBLAS through [`cudarc`](crate::cudarc)) on
    /// [`Device::cuda_stream`]. The tensor's first element is element
    /// [`storage_offset`](Tensor::storage_offset) of the allocation, which may be longer
    /// than the storage; [`Tensor::data_ptr`] is its address in every case.
    ///
    /// ```
    /// # use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[4]).unwrap();
    /// assert!(t.cuda_slice().is_none());
    /// ```
    ///
    /// Only with the `cuda` feature (default).
    #[cfg(feature = "cuda")]
    pub fn cuda_slice(&self) -> Option<&cudarc::driver::CudaSlice<T>> {
        match &self.storage {
            Buffer::Cpu(_) => None,
            Buffer::Cuda(b) => b.slice(),
        }
    }

    /// The device address of the view's first element (storage offset included), or `None`
    /// for a tensor in host memory.
    #[cfg(feature = "cuda")]
    pub(crate) fn device_addr(&self) -> Option<u64> {
        match &self.storage {
            Buffer::Cpu(_) => None,
            Buffer::Cuda(b) => Some(b.device_ptr() + (self.offset * T::KIND.size_bytes()) as u64),
        }
    }

    /// The whole shared storage (for passing the tensor to a kernel).
    pub(crate) fn storage(&self) -> StorageRef<'_, T> {
        match &self.storage {
            Buffer::Cpu(c) => StorageRef::Cpu(c),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => StorageRef::Cuda(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use half::{bf16, f16};

    use super::*;

    fn iota(shape: &[usize]) -> Tensor<i32> {
        let n: usize = shape.iter().product();
        Tensor::from_vec(&Device::cpu(), shape, (0..n as i32).collect()).unwrap()
    }

    #[test]
    fn construction_checks_length_and_overflow() {
        let err = Tensor::<f32>::from_vec(&Device::cpu(), &[2, 3], vec![0.0; 5]).unwrap_err();
        assert_eq!(err.to_string(), "data has 5 elements, but shape [2, 3] needs 6");
        let err = Tensor::<u32>::zeros(&Device::cpu(), &[usize::MAX, 2]).unwrap_err();
        assert!(matches!(err, TensorError::ShapeOverflow { .. }));
        let s = Tensor::from_vec(&Device::cpu(), &[], vec![5i64]).unwrap();
        assert_eq!((s.numel(), s.to_vec()), (1, vec![5]));
        let e = Tensor::<f32>::zeros(&Device::cpu(), &[0, 3]).unwrap();
        assert!(e.to_vec().is_empty() && e.is_contiguous());
    }

    /// Every constructor on sizes no allocation can hold (checked arithmetic, nothing
    /// allocated) and on sizes the allocator refuses (fallible allocation): errors, not a
    /// panic or an abort of the test process.
    #[test]
    fn sizes_that_do_not_fit_are_errors() {
        let dev = Device::cpu();
        type Ctor = fn(&Device, &[usize]) -> Result<Tensor<f32>, TensorError>;
        let ctors: [(&str, Ctor); 5] = [
            ("zeros", |d, s| Tensor::zeros(d, s)),
            ("full", |d, s| Tensor::full(d, s, 1.0)),
            ("randn", |d, s| Tensor::randn(d, s, 0)),
            ("rand_uniform", |d, s| Tensor::rand_uniform(d, s, 0.0, 1.0, 0)),
            ("from_vec", |d, s| Tensor::from_vec(d, s, Vec::new())),
        ];
        for (name, ctor) in ctors {
            // 2^62 elements of 4 bytes: the byte count overflows usize.
            let err = ctor(&dev, &[1 << 62]).unwrap_err();
            assert_eq!(err, TensorError::ShapeOverflow { shape: vec![1 << 62], elem_bytes: 4 }, "{name}");
            assert_eq!(
                err.to_string(),
                "shape [4611686018427387904] has more elements than fit in memory: 4611686018427387904 \
                 elements of 4 bytes exceed the largest possible allocation (9223372036854775807 bytes)",
                "{name}"
            );
            // The element count itself overflows.
            let err = ctor(&dev, &[usize::MAX, 2]).unwrap_err();
            assert!(err.to_string().ends_with("has more elements than fit in memory: the element count overflows usize"), "{name}: {err}");
        }
        // 2^60 elements of 4 bytes: 2^62 bytes, below isize::MAX, but more than any address
        // space holds, so the allocator refuses whatever the overcommit policy.
        for (name, ctor) in &ctors[..4] {
            let err = ctor(&dev, &[1 << 60]).unwrap_err();
            assert!(matches!(&err, TensorError::OutOfMemory { bytes, device, .. } if *bytes == 1 << 62 && device == "cpu"), "{name}: {err}");
            assert!(err.to_string().starts_with("cannot allocate 4611686018427387904 bytes on cpu: "), "{name}: {err}");
        }
        // The case from the issue, 4 TiB: refused by the kernel's overcommit heuristic
        // (mode 0, more than RAM plus swap) or strict accounting (mode 2). Under mode 1
        // (always overcommit) the reservation would succeed and zeroing would touch it all.
        let overcommit = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
        if overcommit.trim() != "1" {
            let err = Tensor::<f32>::zeros(&dev, &[1 << 40]).unwrap_err();
            assert!(matches!(err, TensorError::OutOfMemory { bytes: 4_398_046_511_104, .. }), "{err}");
        }
    }

    #[test]
    fn narrow_out_of_range_names_the_range() {
        let a = iota(&[5, 2]);
        let err = a.narrow(0, 3, 4).unwrap_err();
        assert_eq!(err, TensorError::NarrowOutOfRange { dim: 0, start: 3, len: 4, size: 5 });
        assert_eq!(err.to_string(), "narrow(dim 0, start 3, len 4) is out of range: dimension 0 has size 5");
        // start + len overflowing usize is out of range too, not a panic.
        assert!(matches!(a.narrow(1, usize::MAX, 2), Err(TensorError::NarrowOutOfRange { size: 2, .. })));
        assert_eq!(a.narrow(2, 0, 1).unwrap_err(), TensorError::DimOutOfRange { dim: 2, rank: 2 });
        // An empty range at the end is in range.
        assert_eq!(a.narrow(0, 5, 0).unwrap().numel(), 0);
    }

    #[test]
    fn layout_checks_for_wrappers() {
        let a = iota(&[4, 3]);
        assert!(a.require_contiguous("a").is_ok());
        assert!(a.narrow(0, 1, 2).unwrap().require_contiguous("a").is_ok());
        for v in [a.t(), a.narrow(1, 1, 2).unwrap()] {
            let err = v.require_contiguous("a").unwrap_err();
            assert!(matches!(&err, LaunchError::InvalidArgument { arg: "a", .. }), "{err}");
            assert!(err.to_string().contains("call .contiguous() first"), "{err}");
        }
        assert_eq!(a.t().strides_i32("a").unwrap(), vec![1, 3]);
        assert_eq!(a.narrow(1, 1, 2).unwrap().strides_i32("a").unwrap(), vec![3, 1]);
        // Views whose offsets need more than 32 bits (built directly: no storage that large).
        let wide = Tensor { shape: vec![2, 2], strides: vec![1 << 31, 1], ..a.clone() };
        let err = wide.strides_i32("w").unwrap_err();
        assert!(matches!(&err, LaunchError::InvalidArgument { arg: "w", .. }), "{err}");
        assert!(err.to_string().contains("last element at offset 2147483649"), "{err}");
        let edge = Tensor { shape: vec![2, 2], strides: vec![i32::MAX as usize - 1, 1], ..a.clone() };
        assert_eq!(edge.strides_i32("e").unwrap(), vec![i32::MAX - 1, 1]);
        // A size-1 dimension's stride never scales a non-zero index.
        let row = Tensor { shape: vec![1, 3], strides: vec![1 << 40, 1], ..a.clone() };
        assert_eq!(row.strides_i32("r").unwrap(), vec![0, 1]);
    }

    #[test]
    fn transposed_views_share_storage() {
        let a = iota(&[2, 3]);
        let at = a.t();
        assert_eq!(at.strides(), &[1, 3]);
        assert_eq!(at.to_vec(), vec![0, 3, 1, 4, 2, 5]);
        at.narrow(0, 2, 1).unwrap().fill(-1); // column 2 of `a`
        assert_eq!(a.to_vec(), vec![0, 1, -1, 3, 4, -1]);
        assert_eq!(a.transpose(1, 0).unwrap().to_vec(), at.to_vec());
        assert_eq!(a.transpose(0, 5).unwrap_err(), TensorError::DimOutOfRange { dim: 5, rank: 2 });
        let c = at.contiguous();
        assert_eq!((c.strides(), c.to_vec()), (&[2usize, 1][..], at.to_vec()));
        c.fill(9); // a copy: `a` unchanged
        assert_eq!(a.to_vec()[0], 0);
    }

    #[test]
    fn three_d_views_and_contiguity() {
        let a = iota(&[2, 3, 4]);
        let v = a.transpose(0, 2).unwrap();
        assert_eq!(v.shape(), &[4, 3, 2]);
        assert_eq!(v.to_vec()[..4], [0, 12, 4, 16]);
        let n = a.narrow(1, 1, 2).unwrap();
        assert_eq!(n.storage_offset(), 4);
        assert!(!n.is_contiguous());
        assert_eq!(n.to_vec(), vec![4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23]);
        // Size-1 dimensions do not break contiguity.
        assert!(a.narrow(0, 1, 1).unwrap().is_contiguous());
        assert!(iota(&[3, 1]).t().is_contiguous());
        assert_eq!(a.narrow(2, 4, 0).unwrap().numel(), 0);
        assert!(a.narrow(3, 0, 1).is_err());
    }

    #[test]
    fn random_tensors_are_seeded_and_rounded() {
        let dev = Device::cpu();
        let a = Tensor::<f32>::randn(&dev, &[10_000], 1).unwrap().to_f64_vec();
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.05 && (var - 1.0).abs() < 0.05, "mean {mean} var {var}");
        assert_ne!(a, Tensor::<f32>::randn(&dev, &[10_000], 2).unwrap().to_f64_vec());
        let h = Tensor::<f16>::randn(&dev, &[100], 1).unwrap();
        let f = Tensor::<f32>::randn(&dev, &[100], 1).unwrap();
        for (h, f) in h.to_vec().into_iter().zip(f.to_vec()) {
            assert_eq!(h, f16::from_f32(f));
        }
        let u = Tensor::<bf16>::rand_uniform(&dev, &[1000], 3.0, 5.0, 4).unwrap().to_f64_vec();
        assert!(u.iter().all(|&v| (3.0..=5.0).contains(&v)));
        let i = Tensor::<i32>::rand_uniform(&dev, &[1000], -0.5, 2.49, 4).unwrap().to_vec();
        assert!(i.iter().all(|v| (0..=2).contains(v)) && i.contains(&2));
        for (lo, hi) in [(1.0, 0.0), (f64::NAN, 1.0), (f64::MIN, f64::MAX), (0.0, f64::INFINITY)] {
            assert!(matches!(
                Tensor::<f32>::rand_uniform(&dev, &[1], lo, hi, 0),
                Err(TensorError::InvalidRange { .. })
            ));
        }
    }

    #[test]
    fn debug_and_device() {
        let t = Tensor::<f16>::zeros(&Device::cpu(), &[2, 2]).unwrap();
        assert_eq!(
            format!("{t:?}"),
            "Tensor { dtype: F16, shape: [2, 2], strides: [2, 1], offset: 0, device: cpu }"
        );
        assert_eq!(t.dtype(), DTypeKind::F16);
        assert!(t.to_device(&Device::cpu()).unwrap().device().is_cpu());
        let best = Device::best();
        assert_eq!(t.to_device(&best).unwrap().device(), &best);
    }
}
