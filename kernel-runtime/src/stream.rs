//! Launches on a caller's CUDA stream (feature `cuda`): [`ExternalStream`] wraps a stream
//! that another library owns (a cudarc `CudaStream`, PyTorch's current stream, candle's
//! stream), and [`with_stream`] runs the launches made in a closure on it.
//!
//! # Synchronization
//!
//! A device keeps one stream of its own, on which its copies (constructors,
//! [`Tensor::to_vec`](crate::Tensor::to_vec), [`Tensor::fill`](crate::Tensor::fill)), frees,
//! per-launch workspaces and the launches outside [`with_stream`] are queued. A launch on an
//! external stream is joined with it both ways, with events and no host wait:
//!
//! 1. the external stream waits for the work queued on the device's stream so far (so the
//!    kernel sees tensors this crate uploaded or zeroed);
//! 2. the kernel is queued on the external stream, after the work its owner queued there
//!    before (the caller's stream order);
//! 3. the device's stream waits for the kernel (so this crate's later copies, frees and
//!    launches come after it).
//!
//! An autotuned kernel's first launch for a new key also makes the device's stream wait for
//! the external one before it copies the arguments to time the candidates. Work the caller
//! queues on its stream after a launch is ordered after the kernel by the stream itself;
//! [`Device::synchronize`] waits for the kernel too (step 3) and reports its faults.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use cudarc::driver::{result, sys, CudaStream};

use crate::cuda::CudaDevice;
use crate::device::Device;
use crate::error::DeviceError;

/// A CUDA stream owned by someone else, checked to belong to a device's primary context, on
/// which [`with_stream`] queues launches. Cheap to clone.
///
/// ```
/// use kernel_runtime::{cudarc::driver::CudaContext, with_stream, Device, Tensor};
/// if let Ok(gpu) = Device::cuda(0) {
///     // Any stream of the device's primary context: cudarc's, PyTorch's, candle's.
///     let theirs = CudaContext::new(0).unwrap().new_stream().unwrap();
///     let stream = gpu.wrap_stream(&theirs).unwrap();
///     // Launches made in the closure run on `theirs`, in its order.
///     let n = with_stream(&stream, || Tensor::<f32>::zeros(&gpu, &[1024]).unwrap().numel());
///     assert_eq!(n, 1024);
///     stream.synchronize().unwrap();
/// }
/// ```
#[derive(Clone)]
pub struct ExternalStream {
    inner: Arc<Inner>,
}

struct Inner {
    dev: Arc<CudaDevice>,
    raw: RawStream,
    /// Keeps a cudarc stream alive as long as this value.
    _keep: Option<Arc<CudaStream>>,
}

/// A `CUstream` handle, which may be used from any thread.
#[derive(Clone, Copy, PartialEq, Eq)]
struct RawStream(sys::CUstream);

// SAFETY: a CUDA stream handle is an opaque value the driver accepts from any thread.
unsafe impl Send for RawStream {}
// SAFETY: as above.
unsafe impl Sync for RawStream {}

impl fmt::Debug for ExternalStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExternalStream").field("device", &self.inner.dev.label).field("stream", &self.inner.raw.0).finish()
    }
}

thread_local! {
    /// The stream of the innermost [`with_stream`] on this thread.
    static CURRENT: RefCell<Option<Arc<Inner>>> = const { RefCell::new(None) };
}

/// Runs `f` with the kernel launches it makes on this thread queued on `stream` (see the
/// module docs for how they are ordered with the device's own work); the previous stream is
/// restored afterwards, also when `f` panics. Launches on another device than the stream's
/// fail with [`DeviceError::StreamMismatch`]; CPU launches are unaffected.
///
/// ```
/// use kernel_runtime::{with_stream, Device};
/// if let Ok(gpu) = Device::cuda(0) {
///     // SAFETY: the legacy default stream (0) always exists.
///     let legacy = unsafe { gpu.wrap_raw_stream(std::ptr::null_mut()) }.unwrap();
///     assert_eq!(with_stream(&legacy, || 1 + 1), 2);
/// }
/// ```
pub fn with_stream<R>(stream: &ExternalStream, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Inner>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(Arc::clone(&stream.inner)))));
    f()
}

impl Device {
    /// `stream` (a cudarc stream, such as candle's) as a stream for this GPU's launches.
    ///
    /// # Errors
    /// [`DeviceError::StreamMismatch`] when this is the CPU or the stream belongs to another
    /// context than this GPU's primary context.
    ///
    /// ```
    /// use kernel_runtime::{DeviceError, Device};
    /// let gpu_stream = Device::cuda(0).ok().and_then(|g| g.cuda_stream());
    /// if let Some(s) = gpu_stream {
    ///     assert!(Device::cpu().wrap_stream(&s).is_err());
    /// }
    /// ```
    pub fn wrap_stream(&self, stream: &Arc<CudaStream>) -> Result<ExternalStream, DeviceError> {
        let dev = self.stream_device()?;
        if stream.context().cu_ctx() != dev.ctx.cu_ctx() {
            return Err(DeviceError::StreamMismatch {
                device: dev.label.clone(),
                reason: format!("it belongs to a context of cuda:{} that is not the primary context", stream.context().ordinal()),
            });
        }
        Ok(ExternalStream { inner: Arc::new(Inner { dev, raw: RawStream(stream.cu_stream()), _keep: Some(Arc::clone(stream)) }) })
    }

    /// A raw `CUstream` (PyTorch's `torch.cuda.current_stream().cuda_stream`, `0` for the legacy
    /// default stream, `2` for the per-thread default stream) as a stream for this GPU's
    /// launches.
    ///
    /// # Errors
    /// [`DeviceError::StreamMismatch`] when this is the CPU or the stream belongs to another
    /// context than this GPU's primary context; [`DeviceError::Driver`] when the driver
    /// rejects the handle.
    ///
    /// # Safety
    /// `stream` is a valid stream handle (or `0`, `2`) that stays valid for as long as the
    /// returned value and its clones live.
    pub unsafe fn wrap_raw_stream(&self, stream: sys::CUstream) -> Result<ExternalStream, DeviceError> {
        let dev = self.stream_device()?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: `stream` is valid (the caller's contract); with the context bound, the
        // default streams resolve to it.
        dev.call("cuStreamGetCtx", || unsafe { sys::cuStreamGetCtx(stream, &mut ctx).result() })?;
        if ctx != dev.ctx.cu_ctx() {
            return Err(DeviceError::StreamMismatch {
                device: dev.label.clone(),
                reason: "it belongs to another CUDA context than the device's primary context".into(),
            });
        }
        Ok(ExternalStream { inner: Arc::new(Inner { dev, raw: RawStream(stream), _keep: None }) })
    }

    /// The GPU a stream may be wrapped for.
    fn stream_device(&self) -> Result<Arc<CudaDevice>, DeviceError> {
        self.cuda_device().cloned().ok_or_else(|| DeviceError::StreamMismatch {
            device: self.to_string(),
            reason: "the CPU backend has no streams".into(),
        })
    }
}

impl ExternalStream {
    /// The device whose launches it can carry.
    ///
    /// ```
    /// # use kernel_runtime::Device;
    /// if let Some(s) = Device::cuda(0).ok().and_then(|g| g.cuda_stream()) {
    ///     assert_eq!(Device::cuda(0).unwrap().wrap_stream(&s).unwrap().device(), Device::cuda(0).unwrap());
    /// }
    /// ```
    pub fn device(&self) -> Device {
        Device::from_cuda(Arc::clone(&self.inner.dev))
    }

    /// The raw handle.
    pub fn cu_stream(&self) -> sys::CUstream {
        self.inner.raw.0
    }

    /// Makes the stream wait for the work queued on the device's own stream so far (uploads,
    /// kernels launched outside [`with_stream`]): before the owner of the stream reads
    /// tensors that this crate wrote, or a DLPack export of them.
    ///
    /// # Errors
    /// [`DeviceError::Driver`] when the driver fails.
    pub fn wait_for_device(&self) -> Result<(), DeviceError> {
        join(&self.inner.dev, self.inner.raw.0, self.inner.dev.stream.cu_stream())
    }

    /// Waits for all work queued on this stream, then for the device's own stream, and
    /// reports a kernel fault (out-of-bounds access, failed `device_assert`) recorded since
    /// the last synchronization, as [`Device::synchronize`] does.
    ///
    /// # Errors
    /// [`DeviceError::Driver`] with the CUDA error of failed work;
    /// [`DeviceError::OutOfBounds`] or [`DeviceError::Assertion`] for a kernel fault.
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        let raw = self.inner.raw;
        // SAFETY: a valid stream handle (the constructors' contracts).
        self.inner.dev.call("cuStreamSynchronize", || unsafe { result::stream::synchronize(raw.0) })?;
        self.inner.dev.synchronize()
    }
}

/// Makes `waiter` wait for the work queued on `signaller` so far (an event recorded on one,
/// waited for by the other; no host wait), in `dev`'s context.
pub(crate) fn join(dev: &CudaDevice, waiter: sys::CUstream, signaller: sys::CUstream) -> Result<(), DeviceError> {
    if waiter == signaller {
        return Ok(());
    }
    dev.call("cuStreamWaitEvent (joining an external stream)", || {
        let event = result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)?;
        // SAFETY: both streams are valid handles of this context, `event` was just created
        // and is destroyed once (the driver releases it after the wait resolves).
        unsafe {
            let joined = result::event::record(event, signaller)
                .and_then(|()| result::stream::wait_event(waiter, event, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT));
            let destroyed = result::event::destroy(event);
            joined.and(destroyed)
        }
    })
}

/// The external stream a launch on `dev` from this thread runs on, if [`with_stream`] set one.
///
/// # Errors
/// [`DeviceError::StreamMismatch`] when the stream belongs to another device.
fn current_for(dev: &CudaDevice) -> Result<Option<sys::CUstream>, DeviceError> {
    CURRENT.with(|c| match &*c.borrow() {
        None => Ok(None),
        Some(s) if s.dev.ordinal == dev.ordinal => Ok(Some(s.raw.0)),
        Some(s) => Err(DeviceError::StreamMismatch {
            device: dev.label.clone(),
            reason: format!("the current stream (with_stream) belongs to {}", s.dev.label),
        }),
    })
}

/// Where a launch on `dev` runs: the device's own stream, or the external one of
/// [`with_stream`] after it waits for the device's stream (step 1 of the module docs). Call
/// [`after_launch`] with the result once the kernel is queued.
///
/// # Errors
/// As [`current_for`], or the driver's error.
pub(crate) fn launch_stream(dev: &CudaDevice) -> Result<sys::CUstream, DeviceError> {
    let own = dev.stream.cu_stream();
    match current_for(dev)? {
        None => Ok(own),
        Some(raw) => {
            join(dev, raw, own)?;
            Ok(raw)
        }
    }
}

/// Makes the device's stream wait for a kernel queued on `stream` (step 3 of the module docs;
/// nothing for the device's own stream).
///
/// # Errors
/// The driver's error.
pub(crate) fn after_launch(dev: &CudaDevice, stream: sys::CUstream) -> Result<(), DeviceError> {
    join(dev, dev.stream.cu_stream(), stream)
}

/// Makes the device's stream wait for the external stream of [`with_stream`] (if any), before
/// autotuning copies a launch's arguments on it.
///
/// # Errors
/// As [`current_for`], or the driver's error.
pub(crate) fn wait_for_current(dev: &CudaDevice) -> Result<(), DeviceError> {
    match current_for(dev)? {
        None => Ok(()),
        Some(raw) => join(dev, dev.stream.cu_stream(), raw),
    }
}
