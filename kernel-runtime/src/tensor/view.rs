//! Tensors over memory owned by others, without a copy: host memory (a raw pointer, a
//! borrowed slice, an owner such as a `Vec`) and device memory (a raw CUDA pointer, cudarc's
//! `CudaSlice`, `CudaView` and `CudaViewMut`).
//!
//! Every constructor checks the layout (rank, extent, overflow), the address (null,
//! alignment) and, for device memory, that it is device memory of the device in this crate's
//! context, and returns a typed [`TensorError`] otherwise. What cannot be checked (that the
//! memory stays valid and is not accessed behind the views' back) is the contract of the
//! `unsafe` ones.

use std::ptr::NonNull;
use std::sync::Arc;

#[cfg(feature = "cuda")]
use cudarc::driver::{CudaContext, CudaSlice, CudaView, CudaViewMut, DevicePtr, DeviceSlice};

use super::{checked_numel, contiguous_strides, Buffer, HostCells, Tensor};
#[cfg(feature = "cuda")]
use crate::cuda::memory::{check_pointer, DeviceBuffer, PointerError};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::TensorError;

/// The strides of a view of `shape` with `strides` (row-major when `None`) over memory of
/// `len` elements of `T`, after checking that they match the rank, that the element count
/// and the memory's bytes fit, and that every element lies within the memory.
pub(super) fn checked_layout<T: DType>(shape: &[usize], strides: Option<&[usize]>, len: usize) -> Result<Vec<usize>, TensorError> {
    let strides = match strides {
        Some(s) if s.len() != shape.len() => {
            return Err(TensorError::RankMismatch { shape: shape.to_vec(), strides: s.to_vec() })
        }
        Some(s) => s.to_vec(),
        None => contiguous_strides(shape),
    };
    checked_numel::<T>(&[len])?;
    if checked_numel::<T>(shape)? == 0 {
        return Ok(strides);
    }
    let last = shape
        .iter()
        .zip(&strides)
        .try_fold(0u128, |acc, (&n, &s)| (n as u128 - 1).checked_mul(s as u128).and_then(|d| acc.checked_add(d)))
        .unwrap_or(u128::MAX);
    if last >= len as u128 {
        return Err(TensorError::ViewOutOfBounds { shape: shape.to_vec(), strides, last, len });
    }
    Ok(strides)
}

/// Checks that `addr`, the address of a view's memory, is not null (unless the view is
/// empty) and is aligned to `align` bytes.
fn check_address<T: DType>(addr: u64, align: usize, numel: usize) -> Result<(), TensorError> {
    if addr == 0 && numel > 0 {
        return Err(TensorError::NullPointer { numel });
    }
    if !addr.is_multiple_of(align as u64) {
        return Err(TensorError::Misaligned { addr, dtype: T::KIND, align });
    }
    Ok(())
}

impl<T: DType> Tensor<T> {
    /// A CPU tensor viewing `len` elements of `T` at `ptr`, without a copy: element `i` of the
    /// memory is storage element `i`, and the view has `shape` and `strides` (in elements;
    /// row-major when `None`) from element 0. Views of it (clones, [`narrow`](Tensor::narrow),
    /// [`t`](Tensor::t), ...) share the memory; none of them frees it.
    ///
    /// # Errors
    /// [`TensorError::RankMismatch`], [`TensorError::ShapeOverflow`] or
    /// [`TensorError::ViewOutOfBounds`] for a layout that does not fit in `len` elements;
    /// [`TensorError::NullPointer`] or [`TensorError::Misaligned`] for a bad `ptr`.
    ///
    /// # Safety
    /// - `ptr` is valid for reads and writes of `len` elements of `T` (one allocation) for as
    ///   long as any tensor made from this one lives: its clones and views, and those a
    ///   kernel launch or a DLPack export keeps;
    /// - during that time the memory is read and written only through those tensors (no other
    ///   pointer or reference accesses it; kernels on the CPU backend run on the rayon pool,
    ///   concurrently, with atomic loads and stores).
    ///
    /// ```
    /// use kernel_runtime::Tensor;
    /// let mut data = vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// // SAFETY: `data` outlives `t` and is not touched while `t` lives.
    /// let t = unsafe { Tensor::from_raw_host(data.as_mut_ptr(), data.len(), &[3, 2], Some(&[1, 3])) }.unwrap();
    /// assert_eq!(t.to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// t.narrow(1, 1, 1).unwrap().fill(0.0);
    /// drop(t);
    /// assert_eq!(data, vec![1.0, 2.0, 3.0, 0.0, 0.0, 0.0]);
    /// ```
    pub unsafe fn from_raw_host(ptr: *mut T, len: usize, shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError> {
        // SAFETY: the caller's contract.
        unsafe { Self::host_view(ptr, len, shape, strides, None) }
    }

    /// A CPU tensor viewing `data`, without a copy ([`Tensor::from_raw_host`] with the slice's
    /// pointer and length, so that only the lifetime is left to the caller).
    ///
    /// # Errors
    /// As [`Tensor::from_raw_host`].
    ///
    /// # Safety
    /// `data` outlives every tensor made from this one (clones, views, and those a launch or
    /// a DLPack export keeps) and is accessed only through them meanwhile. A `Tensor` has no
    /// lifetime parameter, so the borrow checker cannot see this: prefer
    /// [`Tensor::from_host_owner`] where the tensor may own the memory.
    ///
    /// ```
    /// use kernel_runtime::Tensor;
    /// let mut data = [1i32, 2, 3, 4];
    /// // SAFETY: `data` outlives `t` and is not touched while `t` lives.
    /// let t = unsafe { Tensor::from_host_slice(&mut data, &[2, 2], None) }.unwrap();
    /// t.narrow(0, 1, 1).unwrap().fill(0);
    /// drop(t);
    /// assert_eq!(data, [1, 2, 0, 0]);
    /// ```
    pub unsafe fn from_host_slice(data: &mut [T], shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError> {
        // SAFETY: a slice is valid and aligned for its length; the lifetime and exclusive use
        // are the caller's contract.
        unsafe { Self::host_view(data.as_mut_ptr(), data.len(), shape, strides, None) }
    }

    /// A CPU tensor over the elements `owner` holds (a `Vec<T>`, a `Box<[T]>`, an array, ...),
    /// without a copy: the tensor owns `owner` and drops it with its last view. Safe: nothing
    /// else can reach the memory.
    ///
    /// `owner.as_mut()` is called once, after `owner` is moved to the heap; its slice must stay
    /// where it is for as long as `owner` is not used, as it does for the standard containers.
    ///
    /// # Errors
    /// As [`Tensor::from_raw_host`], for the slice `owner.as_mut()` returns.
    ///
    /// ```
    /// use kernel_runtime::{Tensor, TensorError};
    /// let data: Vec<f64> = (0..6).map(f64::from).collect();
    /// let t = Tensor::from_host_owner(data, &[2, 3], None).unwrap();
    /// assert_eq!(t.t().to_vec(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    /// let err = Tensor::from_host_owner(vec![0u32; 5], &[2, 3], None).unwrap_err();
    /// assert!(matches!(err, TensorError::ViewOutOfBounds { last: 5, len: 5, .. }));
    /// ```
    pub fn from_host_owner<O>(owner: O, shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError>
    where
        O: AsMut<[T]> + Send + Sync + 'static,
    {
        let mut owner = Box::new(owner);
        let data = (*owner).as_mut();
        let (ptr, len) = (data.as_mut_ptr(), data.len());
        // SAFETY: the slice is valid and aligned; its memory belongs to `owner`, which the
        // tensor keeps (on the heap, never moved or used) until its last view is dropped, so it
        // stays valid and nothing else reaches it.
        unsafe { Self::host_view(ptr, len, shape, strides, Some(owner)) }
    }

    /// [`Tensor::from_raw_host`] keeping `owner` alive with the memory.
    ///
    /// # Safety
    /// As [`Tensor::from_raw_host`], for as long as `owner` is not dropped.
    pub(super) unsafe fn host_view(
        ptr: *mut T,
        len: usize,
        shape: &[usize],
        strides: Option<&[usize]>,
        owner: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Result<Self, TensorError> {
        // A cell has the size and bit validity of its element: each element is read and
        // written as the cell of its width.
        const { assert!(size_of::<T::Atomic>() == size_of::<T>()) };
        let strides = checked_layout::<T>(shape, strides, len)?;
        let numel = if len == 0 { 0 } else { checked_numel::<T>(shape)? };
        check_address::<T>(ptr as u64, align_of::<T::Atomic>(), numel)?;
        let ptr = NonNull::new(ptr.cast::<T::Atomic>()).unwrap_or(NonNull::dangling());
        let cells = HostCells::Foreign { ptr, len, owner };
        Ok(Tensor { device: Device::cpu(), storage: Buffer::Cpu(Arc::new(cells)), shape: shape.to_vec(), strides, offset: 0 })
    }

    /// The address of the view's first element (its storage offset included): a host address
    /// on the CPU, a device address on a GPU, like PyTorch's `data_ptr()`. Two tensors with the
    /// same `data_ptr` view the same memory.
    ///
    /// ```
    /// use kernel_runtime::Tensor;
    /// let mut data = vec![0u16; 8];
    /// let p = data.as_ptr() as u64;
    /// let t = Tensor::from_host_owner(data, &[2, 4], None).unwrap();
    /// assert_eq!(t.data_ptr(), p);
    /// assert_eq!(t.narrow(0, 1, 1).unwrap().data_ptr(), p + 8);
    /// ```
    pub fn data_ptr(&self) -> u64 {
        match &self.storage {
            Buffer::Cpu(cells) => (cells.as_ptr() as u64).wrapping_add((self.offset * size_of::<T>()) as u64),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.device_ptr().wrapping_add((self.offset * size_of::<T>()) as u64),
        }
    }
}

/// CUDA device memory (feature `cuda`).
#[cfg(feature = "cuda")]
impl<T: DType> Tensor<T> {
    /// A tensor on GPU `device` viewing `len` elements of `T` at device address `ptr` (a
    /// `CUdeviceptr`, PyTorch's `data_ptr()`), without a copy: element `i` of the memory is
    /// storage element `i`, and the view has `shape` and `strides` (in elements; row-major
    /// when `None`) from element 0. The tensor does not free the memory.
    ///
    /// # Errors
    /// As [`Tensor::from_raw_host`] for the layout and the address (aligned to the element's
    /// size); [`TensorError::WrongDevice`] when `device` is not a GPU, or when `ptr` is not
    /// device memory of `device` in its primary context (the context this crate and the CUDA
    /// runtime use) or in a stream-ordered pool; [`TensorError::Device`] when the driver fails.
    ///
    /// # Safety
    /// - `[ptr, ptr + len * size_of::<T>())` lies in one live allocation and stays valid for
    ///   as long as any tensor made from this one lives (clones, views, and those a launch or
    ///   a DLPack export keeps) **and the GPU work queued on them has finished**: before the
    ///   owner frees or reuses the memory, drop the views and wait for the device
    ///   ([`Device::synchronize`]) or order the free after its stream;
    /// - work that others queue on the memory meanwhile is ordered with this crate's (see
    ///   [`Device::wrap_stream`] and [`with_stream`](crate::with_stream)); kernels may write
    ///   to any of their tensor arguments.
    ///
    /// ```
    /// use kernel_runtime::{Device, Tensor, TensorError};
    /// let err = unsafe { Tensor::<f32>::from_raw_cuda(&Device::cpu(), 0x1000, 4, &[4], None) }.unwrap_err();
    /// assert!(matches!(err, TensorError::WrongDevice { .. }));
    /// if let Ok(gpu) = Device::cuda(0) {
    ///     let t = Tensor::<f32>::zeros(&gpu, &[8]).unwrap();
    ///     // SAFETY: `t` outlives the view and nothing else writes to it.
    ///     let v = unsafe { Tensor::<f32>::from_raw_cuda(&gpu, t.data_ptr(), 8, &[2, 4], None) }.unwrap();
    ///     assert_eq!(v.data_ptr(), t.data_ptr());
    /// }
    /// ```
    pub unsafe fn from_raw_cuda(device: &Device, ptr: u64, len: usize, shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError> {
        // SAFETY: the caller's contract.
        unsafe { Self::cuda_view(device, ptr, len, shape, strides, None) }
    }

    /// A tensor over a cudarc allocation, without a copy: the tensor owns `slice` and frees it
    /// (on its stream, after the device's queued work) with its last view. The device is the
    /// slice's ordinal; its context must be the device's primary context, the one this crate
    /// uses (cudarc's [`CudaContext::new`], as candle uses it). The device's stream first waits
    /// for the work queued on the slice's stream (its upload, say). Safe: nothing else can
    /// reach the memory. [`Tensor::into_cuda_slice`] gives it back.
    ///
    /// # Errors
    /// As [`Tensor::from_raw_cuda`] for the layout; [`TensorError::WrongDevice`] for a slice
    /// in another context; [`TensorError::Device`] when the device cannot be opened. `slice`
    /// is freed on error.
    ///
    /// ```
    /// use kernel_runtime::{cudarc::driver::CudaContext, Device, Tensor};
    /// if Device::cuda(0).is_ok() {
    ///     let stream = CudaContext::new(0).unwrap().default_stream();
    ///     let slice = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    ///     let t = Tensor::from_cuda_slice(slice, &[2, 2], None).unwrap();
    ///     assert_eq!(t.t().to_vec(), vec![1.0, 3.0, 2.0, 4.0]);
    ///     let slice = t.into_cuda_slice().unwrap();
    ///     assert_eq!(slice.len(), 4);
    /// }
    /// ```
    pub fn from_cuda_slice(slice: CudaSlice<T>, shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError> {
        let device = device_of_context(slice.context())?;
        let strides = checked_layout::<T>(shape, strides, slice.len())?;
        wait_for_owner(&device, slice.stream())?;
        let dev = gpu(&device)?;
        let buf = DeviceBuffer::from_slice(dev, slice);
        Ok(Tensor { storage: Buffer::Cuda(Arc::new(buf)), device, shape: shape.to_vec(), strides, offset: 0 })
    }

    /// The cudarc allocation of this tensor, when it is the only tensor over it and the
    /// storage is one (made by [`Tensor::from_cuda_slice`] or a constructor such as
    /// [`Tensor::zeros`] on a GPU, which may allocate one element more for an empty tensor);
    /// the tensor itself otherwise (views or clones remain, memory given as a raw pointer, or
    /// a CPU tensor).
    ///
    /// # Errors
    /// `self`, unchanged, when the allocation cannot be handed over.
    ///
    /// ```
    /// use kernel_runtime::{Device, Tensor};
    /// let t = Tensor::<f32>::zeros(&Device::cpu(), &[2]).unwrap();
    /// assert!(t.into_cuda_slice().is_err());
    /// ```
    pub fn into_cuda_slice(self) -> Result<CudaSlice<T>, Self> {
        let Tensor { device, storage, shape, strides, offset } = self;
        let back = |storage| Tensor { device: device.clone(), storage, shape: shape.clone(), strides: strides.clone(), offset };
        let Buffer::Cuda(buf) = storage else { return Err(back(storage)) };
        match Arc::try_unwrap(buf) {
            Ok(buf) => buf.into_slice().map_err(|buf| back(Buffer::Cuda(Arc::new(buf)))),
            Err(buf) => Err(back(Buffer::Cuda(buf))),
        }
    }

    /// A tensor viewing a cudarc view (of a `CudaSlice` another library owns), without a
    /// copy; the view's context must be the device's primary context, and the device's stream
    /// first waits for the work queued on the view's stream, as for [`Tensor::from_cuda_slice`].
    ///
    /// # Errors
    /// As [`Tensor::from_cuda_slice`].
    ///
    /// # Safety
    /// As [`Tensor::from_raw_cuda`]: the allocation outlives every tensor made from this one
    /// and the work queued on them. A `CudaView` is read-only: launch only kernels that do
    /// not write to this tensor (or use [`Tensor::from_cuda_view_mut`]).
    ///
    /// ```
    /// use kernel_runtime::{cudarc::driver::CudaContext, Device, Tensor};
    /// if Device::cuda(0).is_ok() {
    ///     let stream = CudaContext::new(0).unwrap().default_stream();
    ///     let slice = stream.clone_htod(&[1i32, 2, 3, 4, 5, 6]).unwrap();
    ///     // SAFETY: `slice` outlives `t`, and nothing writes to it.
    ///     let t = unsafe { Tensor::from_cuda_view(&slice.slice(2..), &[2, 2], None) }.unwrap();
    ///     assert_eq!(t.to_vec(), vec![3, 4, 5, 6]);
    /// }
    /// ```
    pub unsafe fn from_cuda_view(view: &CudaView<'_, T>, shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError> {
        let device = device_of_context(view.stream().context())?;
        wait_for_owner(&device, view.stream())?;
        let (ptr, _record) = view.device_ptr(view.stream());
        // SAFETY: the view's memory is device memory of its context's device; its lifetime is
        // the caller's contract.
        unsafe { Self::cuda_view(&device, ptr, view.len(), shape, strides, None) }
    }

    /// A tensor viewing a mutable cudarc view, without a copy: as
    /// [`Tensor::from_cuda_view`], and kernels may write to it.
    ///
    /// # Errors
    /// As [`Tensor::from_cuda_slice`].
    ///
    /// # Safety
    /// As [`Tensor::from_raw_cuda`].
    ///
    /// ```
    /// use kernel_runtime::{cudarc::driver::CudaContext, Device, Tensor};
    /// if Device::cuda(0).is_ok() {
    ///     let stream = CudaContext::new(0).unwrap().default_stream();
    ///     let mut slice = stream.alloc_zeros::<f32>(6).unwrap();
    ///     // SAFETY: `slice` outlives `t`; its stream is synchronized before it is read.
    ///     let t = unsafe { Tensor::from_cuda_view_mut(&mut slice.slice_mut(3..), &[3], None) }.unwrap();
    ///     t.fill(1.0);
    ///     Device::cuda(0).unwrap().synchronize().unwrap();
    ///     assert_eq!(stream.clone_dtoh(&slice).unwrap(), vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    /// }
    /// ```
    pub unsafe fn from_cuda_view_mut(view: &mut CudaViewMut<'_, T>, shape: &[usize], strides: Option<&[usize]>) -> Result<Self, TensorError> {
        let device = device_of_context(view.stream().context())?;
        wait_for_owner(&device, view.stream())?;
        let len = view.len();
        let (ptr, _record) = view.device_ptr(view.stream());
        // SAFETY: as in `from_cuda_view`.
        unsafe { Self::cuda_view(&device, ptr, len, shape, strides, None) }
    }

    /// [`Tensor::from_raw_cuda`] keeping `owner` alive with the memory (released after the
    /// device's queued work).
    ///
    /// # Safety
    /// As [`Tensor::from_raw_cuda`], for as long as `owner` is not dropped.
    pub(super) unsafe fn cuda_view(
        device: &Device,
        ptr: u64,
        len: usize,
        shape: &[usize],
        strides: Option<&[usize]>,
        owner: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Result<Self, TensorError> {
        let dev = gpu(device)?;
        let strides = checked_layout::<T>(shape, strides, len)?;
        let numel = if len == 0 { 0 } else { checked_numel::<T>(shape)? };
        check_address::<T>(ptr, size_of::<T>(), numel)?;
        if len > 0 {
            check_pointer(dev, ptr).map_err(|e| match e {
                PointerError::Driver(e) => TensorError::Device(e),
                PointerError::Wrong(found) => TensorError::WrongDevice { expected: device.to_string(), found },
            })?;
        }
        // SAFETY: device memory of `dev` (checked); its lifetime is the caller's contract.
        let buf = unsafe { DeviceBuffer::foreign(dev, ptr, len, owner) };
        Ok(Tensor { device: device.clone(), storage: Buffer::Cuda(Arc::new(buf)), shape: shape.to_vec(), strides, offset: 0 })
    }
}

/// Makes `device`'s stream wait for the work queued so far on `owner`'s (the stream of a
/// cudarc slice: its upload, say), so that this crate's copies and launches see it.
#[cfg(feature = "cuda")]
fn wait_for_owner(device: &Device, owner: &cudarc::driver::CudaStream) -> Result<(), TensorError> {
    let dev = gpu(device)?;
    Ok(crate::stream::join(dev, dev.stream.cu_stream(), owner.cu_stream())?)
}

/// The opened GPU of `device`, or `WrongDevice` for the CPU.
#[cfg(feature = "cuda")]
fn gpu(device: &Device) -> Result<&Arc<crate::cuda::CudaDevice>, TensorError> {
    device.cuda_device().ok_or_else(|| TensorError::WrongDevice { expected: device.to_string(), found: "a CUDA device".into() })
}

/// The device whose primary context is `ctx`.
///
/// # Errors
/// [`TensorError::WrongDevice`] when `ctx` is another context; the device's error when it
/// cannot be opened.
#[cfg(feature = "cuda")]
fn device_of_context(ctx: &CudaContext) -> Result<Device, TensorError> {
    let device = Device::cuda(ctx.ordinal())?;
    match device.cuda_device() {
        Some(d) if d.ctx.cu_ctx() == ctx.cu_ctx() => Ok(device),
        _ => Err(TensorError::WrongDevice {
            expected: format!("{device} in its primary context (kernel-runtime's)"),
            found: format!("{device} in another CUDA context"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_views_check_layout_and_address() {
        let mut data: Vec<i32> = (0..12).collect();
        let ptr = data.as_mut_ptr();
        // SAFETY (all views below): `data` outlives them and is read afterwards only.
        let t = unsafe { Tensor::from_raw_host(ptr, 12, &[3, 4], None) }.unwrap();
        assert_eq!((t.strides(), t.to_vec()), (&[4usize, 1][..], (0..12).collect::<Vec<_>>()));
        let cols = unsafe { Tensor::from_raw_host(ptr.wrapping_add(1), 11, &[2, 3], Some(&[4, 2])) }.unwrap();
        assert_eq!(cols.to_vec(), vec![1, 3, 5, 5, 7, 9]);
        // Broadcast (stride 0) is a valid view.
        let b = unsafe { Tensor::from_raw_host(ptr, 12, &[2, 3], Some(&[0, 1])) }.unwrap();
        assert_eq!(b.to_vec(), vec![0, 1, 2, 0, 1, 2]);
        let err = unsafe { Tensor::from_raw_host(ptr, 12, &[3, 4], Some(&[4])) }.unwrap_err();
        assert_eq!(err, TensorError::RankMismatch { shape: vec![3, 4], strides: vec![4] });
        assert_eq!(err.to_string(), "a view of shape [3, 4] needs 2 strides, found [4]");
        let err = unsafe { Tensor::from_raw_host(ptr, 11, &[3, 4], None) }.unwrap_err();
        assert_eq!(err, TensorError::ViewOutOfBounds { shape: vec![3, 4], strides: vec![4, 1], last: 11, len: 11 });
        assert_eq!(err.to_string(), "a view of shape [3, 4] with strides [4, 1] reaches element 11 of memory that holds 11 elements");
        let err = unsafe { Tensor::from_raw_host(ptr, 12, &[2, 2], Some(&[usize::MAX, 1])) }.unwrap_err();
        assert!(matches!(err, TensorError::ViewOutOfBounds { last, .. } if last == usize::MAX as u128 + 1), "{err}");
        let err = unsafe { Tensor::from_raw_host(ptr, 12, &[usize::MAX, 2], None) }.unwrap_err();
        assert!(matches!(err, TensorError::ShapeOverflow { .. }), "{err}");
        let err = unsafe { Tensor::<i32>::from_raw_host(std::ptr::null_mut(), 4, &[4], None) }.unwrap_err();
        assert_eq!(err, TensorError::NullPointer { numel: 4 });
        let odd = ptr.cast::<u8>().wrapping_add(2).cast::<i32>();
        let err = unsafe { Tensor::from_raw_host(odd, 4, &[4], None) }.unwrap_err();
        assert!(matches!(err, TensorError::Misaligned { align: 4, .. }), "{err}");
        assert!(err.to_string().ends_with("is not aligned for i32 elements (alignment 4 bytes)"), "{err}");
        // Empty memory: any address, nothing to read.
        let e = unsafe { Tensor::<f64>::from_raw_host(std::ptr::null_mut(), 0, &[0, 5], None) }.unwrap();
        assert!(e.to_vec().is_empty());
        drop((t, cols, b));
        assert_eq!(data, (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn host_views_write_through_and_share() {
        let mut data = vec![0.0f32; 6];
        // SAFETY: `data` outlives `t` and is read only after `t` is dropped.
        let t = unsafe { Tensor::from_host_slice(&mut data, &[2, 3], None) }.unwrap();
        let p = t.data_ptr();
        t.t().narrow(0, 2, 1).unwrap().fill(5.0); // column 2
        let copy = t.try_duplicate().unwrap();
        copy.fill(-1.0);
        assert_eq!(t.narrow(1, 1, 1).unwrap().data_ptr(), p + 4);
        assert_ne!(copy.data_ptr(), p);
        drop(t);
        assert_eq!(data, vec![0.0, 0.0, 5.0, 0.0, 0.0, 5.0]);
    }

    #[test]
    fn owned_host_memory_is_dropped_with_the_last_view() {
        struct Counted(Vec<u8>, #[allow(dead_code)] Arc<()>);
        impl AsMut<[u8]> for Counted {
            fn as_mut(&mut self) -> &mut [u8] {
                &mut self.0
            }
        }
        let alive = Arc::new(());
        let t = Tensor::from_host_owner(Counted(vec![7; 4], Arc::clone(&alive)), &[4], None).unwrap();
        let v = t.narrow(0, 2, 2).unwrap();
        drop(t);
        assert_eq!(Arc::strong_count(&alive), 2);
        assert_eq!(v.to_vec(), vec![7, 7]);
        drop(v);
        assert_eq!(Arc::strong_count(&alive), 1);
        // The owner is dropped on error too, and an array owner works like a vector.
        let err = Tensor::from_host_owner(Counted(vec![0; 3], Arc::clone(&alive)), &[4], None).unwrap_err();
        assert!(matches!(err, TensorError::ViewOutOfBounds { .. }));
        assert_eq!(Arc::strong_count(&alive), 1);
        let a = Tensor::from_host_owner([1i64, 2, 3], &[3], None).unwrap();
        assert_eq!(a.to_vec(), vec![1, 2, 3]);
    }

    /// Kernels on the CPU backend run on views over borrowed memory like on their own tensors.
    #[test]
    fn launches_write_borrowed_memory() {
        use crate::__private::{launch_cpu, ptr_arg, KernelInfo, ModuleInfo, ParamInfo, ParamKind};
        use crate::cpu::{store, Blk, Site, P};
        use crate::DTypeKind;
        static INFO: KernelInfo = KernelInfo {
            name: "square",
            params: &[ParamInfo { name: "y_ptr", kind: ParamKind::Ptr(DTypeKind::I64) }],
            configs: &[],
            key: &[],
            instances: &[],
            module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] },
            asserts: &[],
        };
        let mut data = vec![-1i64; 10];
        // SAFETY: `data` outlives `y` and is read only after `y` is dropped.
        let y = unsafe { Tensor::from_host_slice(&mut data, &[5], Some(&[2])) }.unwrap();
        let site = Site { kernel: "square", line: 1, column: 1 };
        launch_cpu(&INFO, &[ptr_arg("y_ptr", &y)], [5, 1, 1], &|ctx| {
            let pid = i64::from(ctx.program_id(0));
            store(ctx, &Blk::scalar(P { buf: 0, off: 2 * pid }), &Blk::scalar(pid * pid), None, &site)
        })
        .unwrap();
        // Accesses are checked against the memory given (10 elements): one past is an error,
        // not a write past `data`.
        let err = launch_cpu(&INFO, &[ptr_arg("y_ptr", &y)], [1, 1, 1], &|ctx| {
            store(ctx, &Blk::scalar(P { buf: 0, off: 10 }), &Blk::scalar(1i64), None, &site)
        })
        .unwrap_err();
        assert!(err.to_string().contains("index 10 of argument `y_ptr` (length 10)"), "{err}");
        drop(y);
        assert_eq!(data, vec![0, -1, 1, -1, 4, -1, 9, -1, 16, -1]);
    }
}
