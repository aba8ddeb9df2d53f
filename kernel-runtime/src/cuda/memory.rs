//! Device memory of a tensor: a plain device allocation (`cuMemAlloc`, or
//! `cuMemAllocAsync` from the device's default pool where supported; never
//! managed memory) and the copies between it and the host.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{result, CudaSlice, DevicePtr};

use super::CudaDevice;
use crate::dtype::DType;
use crate::error::DeviceError;

/// `len` elements of `T` in the memory of one device.
pub(crate) struct DeviceBuffer<T: DType> {
    /// The allocation: at least one element, so that empty tensors never ask
    /// the driver for zero bytes.
    slice: CudaSlice<T>,
    /// Elements in use.
    len: usize,
    /// Address of element 0.
    ptr: u64,
    dev: Arc<CudaDevice>,
}

impl<T: DType> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer").field("device", &self.dev.label).field("len", &self.len).finish()
    }
}

/// `"cuMemAlloc (N bytes)"`-style operation names.
fn bytes_op<T>(op: &str, n: usize) -> String {
    format!("{op} ({} bytes)", n.saturating_mul(size_of::<T>()))
}

impl<T: DType> DeviceBuffer<T> {
    /// An uninitialized allocation of `len` elements.
    fn alloc(dev: &Arc<CudaDevice>, len: usize) -> Result<Self, DeviceError> {
        if len.checked_mul(size_of::<T>()).is_none_or(|b| b > isize::MAX as usize) {
            return Err(DeviceError::Driver {
                device: dev.label.clone(),
                op: format!("allocating {len} elements of {}", T::KIND),
                code: "CUDA_ERROR_OUT_OF_MEMORY".into(),
                message: "the size overflows".into(),
            });
        }
        let stream = &dev.stream;
        // SAFETY: the memory is written before it is read (upload) or zeroed (`zeros`).
        let slice = dev.call(bytes_op::<T>("cuMemAlloc", len), || unsafe { stream.alloc::<T>(len.max(1)) })?;
        let ptr = {
            // Event tracking is off: the returned guard records nothing.
            let (ptr, _sync) = slice.device_ptr(stream);
            ptr
        };
        Ok(DeviceBuffer { ptr, len, slice, dev: Arc::clone(dev) })
    }

    /// A copy of `data` in device memory.
    pub(crate) fn upload(dev: &Arc<CudaDevice>, data: &[T]) -> Result<Self, DeviceError> {
        let buf = Self::alloc(dev, data.len())?;
        buf.write(0, data)?;
        Ok(buf)
    }

    /// `len` zero elements (all bits zero, which is `0` for every dtype).
    pub(crate) fn zeros(dev: &Arc<CudaDevice>, len: usize) -> Result<Self, DeviceError> {
        let buf = Self::alloc(dev, len)?;
        let (ptr, bytes, stream) = (buf.ptr, len * size_of::<T>(), dev.stream.cu_stream());
        if bytes > 0 {
            // SAFETY: `[ptr, ptr + bytes)` is inside the allocation.
            dev.call(format!("cuMemsetD8Async ({bytes} bytes)"), || unsafe {
                result::memset_d8_async(ptr, 0, bytes, stream)
            })?;
        }
        Ok(buf)
    }

    /// Elements in use.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The device address of element 0.
    pub(crate) fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// The allocation, for interoperation through cudarc.
    pub(crate) fn slice(&self) -> &CudaSlice<T> {
        &self.slice
    }

    /// Checks `[start, start + n)` against the buffer.
    fn check_range(&self, op: &str, start: usize, n: usize) -> Result<(), DeviceError> {
        if start.checked_add(n).is_none_or(|end| end > self.len) {
            return Err(DeviceError::Driver {
                device: self.dev.label.clone(),
                op: format!("{op} of elements {start}..{} of a buffer of {}", start.saturating_add(n), self.len),
                code: "CUDA_ERROR_INVALID_VALUE".into(),
                message: "the range is out of bounds (this is a bug in kernel-runtime)".into(),
            });
        }
        Ok(())
    }

    /// Copies `data` to elements `start..` (queued on the stream; the host
    /// data is staged before this returns, as for any pageable copy).
    pub(crate) fn write(&self, start: usize, data: &[T]) -> Result<(), DeviceError> {
        self.check_range("upload", start, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let dst = self.ptr + (start * size_of::<T>()) as u64;
        let stream = self.dev.stream.cu_stream();
        // SAFETY: the destination range is inside the allocation (checked above).
        self.dev.call(bytes_op::<T>("cuMemcpyHtoDAsync", data.len()), || unsafe {
            result::memcpy_htod_async(dst, data, stream)
        })
    }

    /// Elements `start..start + n`, after all queued work on the device's
    /// stream (errors of earlier asynchronous work, such as a failed kernel,
    /// surface here).
    pub(crate) fn read(&self, start: usize, n: usize) -> Result<Vec<T>, DeviceError> {
        self.check_range("download", start, n)?;
        let mut out = vec![T::default(); n];
        if n > 0 {
            let src = self.ptr + (start * size_of::<T>()) as u64;
            let stream = self.dev.stream.cu_stream();
            // SAFETY: the source range is inside the allocation; `out` has `n`
            // elements and is not touched until the stream is synchronized.
            self.dev.call(bytes_op::<T>("cuMemcpyDtoHAsync", n), || unsafe {
                result::memcpy_dtoh_async(&mut out, src, stream)
            })?;
        }
        self.dev.synchronize()?;
        Ok(out)
    }
}
