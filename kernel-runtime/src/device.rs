//! Where tensors live and kernels run.

use std::fmt;

use crate::error::DeviceError;

/// A compute device: the CPU (the rayon thread pool) or a CUDA GPU.
///
/// This build has only the CPU backend; [`Device::cuda`] reports that plainly
/// instead of failing later. [`Device::best`] (also `Default`) picks a usable
/// GPU when there is one and the CPU otherwise.
///
/// ```
/// use kernel_runtime::Device;
/// let dev = Device::best();
/// assert!(dev.is_cpu()); // no CUDA backend in this build
/// assert_eq!(dev.to_string(), "cpu");
/// assert!(dev.describe().starts_with("CPU (rayon, "));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Cpu,
    #[expect(dead_code, reason = "constructed by the CUDA backend, which arrives in a later issue")]
    Cuda(usize),
}

/// Why CUDA is unavailable in this build, shown in [`DeviceError`].
const NO_CUDA_BACKEND: &str =
    "this build of kernel-runtime has no CUDA backend yet (kernels run on the CPU: use `Device::cpu()`)";

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

    /// The CUDA GPU with this ordinal.
    ///
    /// # Errors
    /// [`DeviceError::CudaUnavailable`] when the GPU cannot be used; in this
    /// build always, since the CUDA backend is not compiled in yet.
    ///
    /// ```
    /// use kernel_runtime::{Device, DeviceError};
    /// let err = Device::cuda(0).unwrap_err();
    /// assert!(matches!(err, DeviceError::CudaUnavailable { ordinal: 0, .. }));
    /// assert!(err.to_string().starts_with("cuda device 0 is not available"));
    /// ```
    pub fn cuda(ordinal: usize) -> Result<Self, DeviceError> {
        Err(DeviceError::CudaUnavailable { ordinal, reason: NO_CUDA_BACKEND.to_string() })
    }

    /// The best device available: GPU 0 when it is usable, else the CPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert_eq!(Device::best(), Device::default());
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

    /// The CUDA ordinal, or `None` for the CPU.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// assert_eq!(Device::cpu().cuda_ordinal(), None);
    /// ```
    pub fn cuda_ordinal(&self) -> Option<usize> {
        match self.kind {
            Kind::Cpu => None,
            Kind::Cuda(i) => Some(i),
        }
    }

    /// A one-line human description, e.g. `CPU (rayon, 2 threads)`.
    ///
    /// ```
    /// use kernel_runtime::Device;
    /// let d = Device::cpu().describe();
    /// assert!(d.starts_with("CPU (rayon, ") && d.ends_with(")"));
    /// ```
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Cpu => {
                let n = rayon::current_num_threads();
                format!("CPU (rayon, {n} thread{})", if n == 1 { "" } else { "s" })
            }
            Kind::Cuda(i) => format!("CUDA device {i}"),
        }
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
        match self.kind {
            Kind::Cpu => f.write_str("cpu"),
            Kind::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_is_a_typed_error() {
        let err = Device::cuda(3).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("cuda device 3 is not available: {NO_CUDA_BACKEND}")
        );
    }

    #[test]
    fn best_is_cpu_and_describes_itself() {
        let d = Device::default();
        assert!(d.is_cpu());
        assert_eq!(d.cuda_ordinal(), None);
        assert_eq!(d.to_string(), "cpu");
        let n = rayon::current_num_threads();
        assert!(d.describe().contains(&format!("{n} thread")));
    }
}
