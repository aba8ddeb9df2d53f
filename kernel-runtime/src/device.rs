//! Where tensors live and kernels run.

use std::fmt;
use std::hash::{Hash, Hasher};
#[cfg(feature = "cuda")]
use std::sync::Arc;

#[cfg(feature = "cuda")]
use crate::cuda::{self, CudaDevice};
use crate::error::DeviceError;

/// A compute device: the CPU (the rayon thread pool) or a CUDA GPU.
///
/// Cheap to clone (a CUDA device is shared: every `Device` of one ordinal uses
/// the same context, stream and loaded PTX), and compared by kind and ordinal.
/// [`Device::best`] (also `Default`) picks GPU 0 when it is usable and the CPU
/// otherwise.
///
/// ```
/// use kernel_runtime::Device;
/// let dev = Device::best();
/// if dev.is_cpu() {
///     assert_eq!(dev.to_string(), "cpu");
///     assert!(dev.describe().starts_with("CPU (rayon, "));
/// } else {
///     assert_eq!(dev.to_string(), "cuda:0");
///     assert!(dev.describe().starts_with("CUDA device 0: "));
/// }
/// ```
#[derive(Clone)]
pub struct Device {
    kind: Kind,
}

#[derive(Clone)]
enum Kind {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda(Arc<CudaDevice>),
}

/// What identifies a device: its kind and ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum DeviceKey {
    Cpu,
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Cuda(usize),
}

impl fmt::Display for DeviceKey {
    /// `cpu` or `cuda:N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceKey::Cpu => f.write_str("cpu"),
            DeviceKey::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

impl Device {
    /// The CPU device: kernels run as rayon tasks, one per program instance.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert!(Device::cpu().is_cpu());
    /// ```
    pub fn cpu() -> Self {
        Device { kind: Kind::Cpu }
    }

    /// The CUDA GPU with this ordinal. The first call for an ordinal loads the
    /// driver (`libcuda.so`, at run time), retains the device's primary context
    /// and creates the stream all its work is queued on; later calls share them.
    ///
    /// # Errors
    /// [`DeviceError::NoDriver`] when the NVIDIA driver library cannot be
    /// loaded, [`DeviceError::NoSuchDevice`] for an ordinal past the last GPU,
    /// [`DeviceError::Driver`] when the driver fails (with the CUDA error name),
    /// [`DeviceError::CudaNotBuilt`] when this crate was built without its `cuda` feature.
    ///
    /// ```
    /// use kernel_runtime::{Device, DeviceError};
    /// match Device::cuda(0) {
    ///     Ok(gpu) => assert_eq!(gpu.cuda_ordinal(), Some(0)),
    ///     Err(DeviceError::NoDriver { .. }) => {
    ///         let msg = Device::cuda(0).unwrap_err().to_string();
    ///         assert!(msg.starts_with("no CUDA driver found (libcuda.so): "));
    ///     }
    ///     Err(e) => println!("no usable GPU: {e}"),
    /// }
    /// ```
    pub fn cuda(ordinal: usize) -> Result<Self, DeviceError> {
        #[cfg(feature = "cuda")]
        return Ok(Device { kind: Kind::Cuda(cuda::open(ordinal)?) });
        #[cfg(not(feature = "cuda"))]
        {
            let _ = ordinal;
            Err(DeviceError::CudaNotBuilt)
        }
    }

    /// How many CUDA devices the driver reports (0 when there is no driver, or when this crate
    /// was built without its `cuda` feature).
    ///
    /// # Errors
    /// [`DeviceError::Driver`] when the driver is present but fails to initialize.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// if let Ok(n) = Device::cuda_count() {
    ///     assert_eq!(n == 0, Device::cuda(0).is_err());
    /// }
    /// ```
    pub fn cuda_count() -> Result<usize, DeviceError> {
        #[cfg(feature = "cuda")]
        return cuda::device_count();
        #[cfg(not(feature = "cuda"))]
        Ok(0)
    }

    /// The best device available: GPU 0 when it is usable, else the CPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert_eq!(Device::best(), Device::default());
    /// assert_eq!(Device::best().is_cpu(), Device::cuda(0).is_err());
    /// ```
    pub fn best() -> Self {
        Device::cuda(0).unwrap_or_else(|_| Device::cpu())
    }

    /// Whether this is the CPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert!(Device::cpu().is_cpu());
    /// ```
    pub fn is_cpu(&self) -> bool {
        matches!(self.kind, Kind::Cpu)
    }

    /// Whether this is a CUDA GPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert!(!Device::cpu().is_cuda());
    /// ```
    pub fn is_cuda(&self) -> bool {
        !self.is_cpu()
    }

    /// The CUDA ordinal, or `None` for the CPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert_eq!(Device::cpu().cuda_ordinal(), None);
    /// ```
    pub fn cuda_ordinal(&self) -> Option<usize> {
        match &self.kind {
            Kind::Cpu => None,
            #[cfg(feature = "cuda")]
            Kind::Cuda(d) => Some(d.ordinal),
        }
    }

    /// The compute capability `(major, minor)` of a GPU (`(9, 0)` for an
    /// H100), or `None` for the CPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert_eq!(Device::cpu().compute_capability(), None);
    /// ```
    pub fn compute_capability(&self) -> Option<(u32, u32)> {
        match &self.kind {
            Kind::Cpu => None,
            #[cfg(feature = "cuda")]
            Kind::Cuda(d) => Some(d.cc),
        }
    }

    /// How many program instances the device runs at once at one per unit: a GPU's streaming
    /// multiprocessors (132 on an H100), the CPU's rayon threads. Persistent kernels launch
    /// this many programs, each looping over tiles (Triton's `NUM_SMS`).
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert!(Device::cpu().multiprocessor_count() >= 1);
    /// ```
    pub fn multiprocessor_count(&self) -> usize {
        match &self.kind {
            Kind::Cpu => rayon::current_num_threads(),
            #[cfg(feature = "cuda")]
            Kind::Cuda(d) => d.sm_count as usize,
        }
    }

    /// A one-line human description: `CPU (rayon, 2 threads)` or
    /// `CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)`.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let d = Device::cpu().describe();
    /// assert!(d.starts_with("CPU (rayon, ") && d.ends_with(")"));
    /// ```
    pub fn describe(&self) -> String {
        match &self.kind {
            Kind::Cpu => {
                let n = rayon::current_num_threads();
                format!("CPU (rayon, {n} thread{})", if n == 1 { "" } else { "s" })
            }
            #[cfg(feature = "cuda")]
            Kind::Cuda(d) => d.describe(),
        }
    }

    /// Waits until all work queued on the device has finished. Kernel
    /// launches on a GPU are asynchronous: a kernel that fails (an illegal
    /// address, say) is reported here, or by the next call that waits for the
    /// device (such as [`Tensor::to_vec`](crate::Tensor::to_vec)), unless
    /// `KERNEL_SYNC=1` makes every launch wait. On the CPU launches are
    /// synchronous and this does nothing. Call it before reading a clock when
    /// timing GPU work.
    ///
    /// # Errors
    /// [`DeviceError::Driver`] with the CUDA error of the failed work.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// Device::cpu().synchronize().unwrap();
    /// ```
    pub fn synchronize(&self) -> Result<(), DeviceError> {
        match &self.kind {
            Kind::Cpu => Ok(()),
            #[cfg(feature = "cuda")]
            Kind::Cuda(d) => d.synchronize(),
        }
    }

    /// The cudarc stream all of this GPU's work is queued on (`None` for the
    /// CPU), for calling other CUDA libraries (cuBLAS through
    /// [`cudarc`](crate::cudarc)) in order with this crate's launches.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert!(Device::cpu().cuda_stream().is_none());
    /// ```
    ///
    /// Only with the `cuda` feature (default).
    #[cfg(feature = "cuda")]
    pub fn cuda_stream(&self) -> Option<Arc<cudarc::driver::CudaStream>> {
        match &self.kind {
            Kind::Cpu => None,
            Kind::Cuda(d) => Some(Arc::clone(&d.stream)),
        }
    }

    /// The device value of an opened CUDA device.
    #[cfg(feature = "cuda")]
    pub(crate) fn from_cuda(d: Arc<CudaDevice>) -> Self {
        Device { kind: Kind::Cuda(d) }
    }

    /// The opened CUDA device, or `None` for the CPU.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda_device(&self) -> Option<&Arc<CudaDevice>> {
        match &self.kind {
            Kind::Cpu => None,
            Kind::Cuda(d) => Some(d),
        }
    }

    /// Kind and ordinal.
    pub(crate) fn key(&self) -> DeviceKey {
        match &self.kind {
            Kind::Cpu => DeviceKey::Cpu,
            #[cfg(feature = "cuda")]
            Kind::Cuda(d) => DeviceKey::Cuda(d.ordinal),
        }
    }
}

impl PartialEq for Device {
    /// Same kind and ordinal.
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Device {}

impl Hash for Device {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl Default for Device {
    /// Same as [`Device::best`].
    fn default() -> Self {
        Device::best()
    }
}

impl fmt::Display for Device {
    /// `cpu` or `cuda:N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.key().fmt(f)
    }
}

impl fmt::Debug for Device {
    /// `Device(cpu)` or `Device(cuda:N)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.key())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this machine has the NVIDIA driver (the CI and build machines do not).
    #[cfg(feature = "cuda")]
    fn has_driver() -> bool {
        !matches!(Device::cuda(0), Err(DeviceError::NoDriver { .. }))
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn without_the_cuda_feature_there_is_no_gpu() {
        let err = Device::cuda(0).unwrap_err();
        assert_eq!(err, DeviceError::CudaNotBuilt);
        assert!(err.to_string().contains("without its `cuda` feature"), "{err}");
        assert_eq!(Device::cuda_count(), Ok(0));
        assert!(Device::best().is_cpu());
    }

    #[test]
    #[cfg(feature = "cuda")]
    fn cuda_without_a_driver_is_a_typed_error() {
        if has_driver() {
            println!("note: skipped, this machine has a CUDA driver");
            return;
        }
        let err = Device::cuda(3).unwrap_err();
        let DeviceError::NoDriver { reason } = &err else { panic!("expected NoDriver, got {err:?}") };
        assert!(reason.contains("libcuda.so"), "{reason}");
        let msg = err.to_string();
        println!("{msg}");
        assert!(msg.starts_with("no CUDA driver found (libcuda.so): the dynamic loader could not open any of "), "{msg}");
        assert!(msg.ends_with("or run kernels on the CPU with `Device::cpu()`"), "{msg}");
        assert_eq!(Device::cuda_count(), Ok(0));
        let best = Device::best();
        assert!(best.is_cpu() && !best.is_cuda());
        assert_eq!(best.synchronize(), Ok(()));
        assert!(best.cuda_stream().is_none());
    }

    #[test]
    fn best_describes_itself_and_compares_by_kind() {
        let d = Device::default();
        assert_eq!(d, Device::best());
        if d.is_cpu() {
            assert_eq!(d.cuda_ordinal(), None);
            assert_eq!(d.to_string(), "cpu");
            assert_eq!(format!("{d:?}"), "Device(cpu)");
            let n = rayon::current_num_threads();
            assert!(d.describe().contains(&format!("{n} thread")));
        }
        assert_eq!(DeviceKey::Cuda(2).to_string(), "cuda:2");
        assert_ne!(DeviceKey::Cuda(0), DeviceKey::Cpu);
    }

    #[test]
    fn driver_messages() {
        let e = DeviceError::NoSuchDevice { ordinal: 4, count: 1 };
        assert_eq!(e.to_string(), "cuda device 4 does not exist: this machine has 1 CUDA device");
        let e = DeviceError::Driver {
            device: "cuda:0".into(),
            op: "cuMemAlloc (1024 bytes)".into(),
            code: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            message: "out of memory".into(),
        };
        assert_eq!(e.to_string(), "cuMemAlloc (1024 bytes) on cuda:0 failed: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
    }
}
