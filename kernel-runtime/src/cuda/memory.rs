//! Device memory of a tensor: a plain device allocation (`cuMemAlloc`, or
//! `cuMemAllocAsync` from the device's default pool where supported; never
//! managed memory) and the copies between it and the host.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaSlice, DevicePtr};

use super::CudaDevice;
use crate::dtype::DType;
use crate::error::DeviceError;

/// `len` elements of `T` in the memory of one device.
pub(crate) struct DeviceBuffer<T: DType> {
    mem: Memory<T>,
    /// Elements in use.
    len: usize,
    /// Address of element 0.
    ptr: u64,
    dev: Arc<CudaDevice>,
}

/// Where a buffer's memory comes from.
enum Memory<T> {
    /// A cudarc allocation: this crate's (at least one element, so that empty tensors never
    /// ask the driver for zero bytes; on the device's stream), or a caller's
    /// ([`DeviceBuffer::from_slice`], on its own stream). Freed when the buffer is dropped.
    Slice(CudaSlice<T>),
    /// Memory lent by the caller; `owner`, when there is one, keeps it alive and is dropped
    /// with the buffer.
    Foreign(Option<Box<dyn Any + Send + Sync>>),
}

impl<T: DType> Drop for DeviceBuffer<T> {
    /// Orders the release of the memory after the work queued on the device's stream: a
    /// caller's `CudaSlice` is freed on its own stream, which first waits for the device's; a
    /// foreign owner's release (a DLPack deleter, say) is not stream-ordered, so the stream is
    /// synchronized first. Errors are left for the next user of the stream to report.
    fn drop(&mut self) {
        let stream = &self.dev.stream;
        match &self.mem {
            Memory::Slice(s) if s.stream().cu_stream() != stream.cu_stream() => {
                let _ = self.dev.call("cuStreamWaitEvent (freeing a caller's slice)", || s.stream().join(stream));
            }
            Memory::Foreign(Some(_)) => {
                let _ = self.dev.call("cuStreamSynchronize (releasing imported memory)", || stream.synchronize());
            }
            _ => {}
        }
    }
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
        Ok(DeviceBuffer { ptr, len, mem: Memory::Slice(slice), dev: Arc::clone(dev) })
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

    /// The cudarc allocation, for interoperation through cudarc (`None` for memory lent as a
    /// raw pointer).
    pub(crate) fn slice(&self) -> Option<&CudaSlice<T>> {
        match &self.mem {
            Memory::Slice(s) => Some(s),
            Memory::Foreign(_) => None,
        }
    }

    /// A caller's allocation, which the buffer owns from now on (all of it in use). The caller
    /// checked that the slice is in `dev`'s context.
    pub(crate) fn from_slice(dev: &Arc<CudaDevice>, slice: CudaSlice<T>) -> Self {
        let ptr = {
            let (ptr, _sync) = slice.device_ptr(slice.stream());
            ptr
        };
        DeviceBuffer { ptr, len: slice.len(), mem: Memory::Slice(slice), dev: Arc::clone(dev) }
    }

    /// The cudarc allocation, handed over (its stream first waits for the device's queued
    /// work), or the buffer itself when its memory is not one.
    pub(crate) fn into_slice(mut self) -> Result<CudaSlice<T>, Self> {
        match std::mem::replace(&mut self.mem, Memory::Foreign(None)) {
            Memory::Slice(s) => {
                let stream = &self.dev.stream;
                if s.stream().cu_stream() != stream.cu_stream() {
                    let _ = self.dev.call("cuStreamWaitEvent (handing a slice back)", || s.stream().join(stream));
                }
                Ok(s)
            }
            other => {
                self.mem = other;
                Err(self)
            }
        }
    }

    /// `len` elements at `ptr`, which the buffer does not free; `owner` is dropped with it.
    ///
    /// # Safety
    /// `[ptr, ptr + len * size_of::<T>())` is device memory of `dev` that stays valid until
    /// the buffer is dropped and the work queued on it has finished.
    pub(crate) unsafe fn foreign(dev: &Arc<CudaDevice>, ptr: u64, len: usize, owner: Option<Box<dyn Any + Send + Sync>>) -> Self {
        DeviceBuffer { ptr, len, mem: Memory::Foreign(owner), dev: Arc::clone(dev) }
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

/// Where device memory at address `ptr` lives: checks that it is device memory (not host or
/// unknown memory) of `dev`, allocated in its primary context or in a context-free pool.
///
/// # Errors
/// A [`PointerError`] naming what was found.
pub(crate) fn check_pointer(dev: &CudaDevice, ptr: u64) -> Result<(), PointerError> {
    use sys::CUpointer_attribute as A;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    let mut memory_type: u32 = 0;
    let mut ordinal: i32 = -1;
    let mut attrs = [A::CU_POINTER_ATTRIBUTE_CONTEXT, A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL];
    let mut data: [*mut std::ffi::c_void; 3] = [
        std::ptr::from_mut(&mut ctx).cast(),
        std::ptr::from_mut(&mut memory_type).cast(),
        std::ptr::from_mut(&mut ordinal).cast(),
    ];
    // SAFETY: each data pointer points to a value of the attribute's type (a context handle,
    // an unsigned int, an int); the call writes nothing else. Unknown pointers give CUDA_SUCCESS
    // with null/zero values.
    dev.call("cuPointerGetAttributes", || unsafe {
        sys::cuPointerGetAttributes(3, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr).result()
    })
    .map_err(PointerError::Driver)?;
    if memory_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
        let found = match memory_type {
            0 => "memory CUDA does not know (not a device allocation)".to_string(),
            t if t == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32 => "host memory".to_string(),
            t => format!("memory of CUDA memory type {t}"),
        };
        return Err(PointerError::Wrong(found));
    }
    if usize::try_from(ordinal).ok() != Some(dev.ordinal) {
        return Err(PointerError::Wrong(format!("cuda:{ordinal}")));
    }
    if !ctx.is_null() && ctx != dev.ctx.cu_ctx() {
        return Err(PointerError::Wrong(format!("cuda:{ordinal} in another CUDA context than its primary context")));
    }
    Ok(())
}

/// Why [`check_pointer`] refused an address.
#[derive(Debug)]
pub(crate) enum PointerError {
    /// The query failed.
    Driver(DeviceError),
    /// The memory is elsewhere: where.
    Wrong(String),
}
