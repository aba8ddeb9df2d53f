//! Error types at the runtime's boundaries: launching ([`LaunchError`]),
//! building tensors ([`TensorError`]) and opening devices ([`DeviceError`]).

use crate::cpu::KernelError;

/// Why a kernel launch failed.
///
/// ```
/// use kernel_runtime::LaunchError;
/// let e = LaunchError::InvalidArgument {
///     arg: "a",
///     expected: "a tensor of f16".into(),
///     found: "a tensor of f32".into(),
/// };
/// assert_eq!(e.to_string(), "invalid argument `a`: expected a tensor of f16, found a tensor of f32");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// A tensor argument lives on another device than the launch.
    #[error("argument `{arg}` is on device {found}, but the kernel launches on {expected}")]
    DeviceMismatch {
        /// Name of the kernel parameter.
        arg: &'static str,
        /// The launch device.
        expected: String,
        /// The argument's device.
        found: String,
    },
    /// The launch grid is negative or larger than the hardware limits.
    #[error("invalid launch grid: {reason}")]
    InvalidGrid {
        /// What is wrong, with the offending value.
        reason: String,
    },
    /// No compiled instance of the kernel matches the launch.
    #[error("kernel `{kernel}` has no instance for this launch: {reason}")]
    NoInstance {
        /// The kernel's name.
        kernel: &'static str,
        /// Which meta-parameters or device were asked for.
        reason: String,
    },
    /// A program instance failed while running (out-of-bounds access, ...).
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// The device's backend cannot run kernels in this build or on this machine.
    #[error("the {device} backend is unavailable: {reason}")]
    BackendUnavailable {
        /// The device asked for.
        device: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// An argument has the wrong type, shape or value.
    #[error("invalid argument `{arg}`: expected {expected}, found {found}")]
    InvalidArgument {
        /// Name of the kernel parameter.
        arg: &'static str,
        /// What the kernel needs.
        expected: String,
        /// What was given.
        found: String,
    },
}

/// Why a tensor could not be built or viewed.
///
/// ```
/// use kernel_runtime::{Device, Tensor, TensorError};
/// let err = Tensor::<f32>::from_vec(&Device::cpu(), &[2, 3], vec![0.0; 5]).unwrap_err();
/// assert!(matches!(err, TensorError::ShapeMismatch { expected: 6, found: 5, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The data length differs from the product of the shape.
    #[error("data has {found} elements, but shape {shape:?} needs {expected}")]
    ShapeMismatch {
        /// The requested shape.
        shape: Vec<usize>,
        /// Product of the shape.
        expected: usize,
        /// Length of the data given.
        found: usize,
    },
    /// The product of the shape overflows `usize`.
    #[error("shape {shape:?} has too many elements (the product overflows usize)")]
    ShapeOverflow {
        /// The requested shape.
        shape: Vec<usize>,
    },
    /// A dimension index is not below the tensor's rank.
    #[error("dimension {dim} is out of range for a tensor of rank {rank}")]
    DimOutOfRange {
        /// The dimension asked for.
        dim: usize,
        /// The tensor's rank.
        rank: usize,
    },
    /// `rand_uniform` was given an empty or non-finite range.
    #[error("invalid sampling range: expected finite lo < hi, found lo = {lo}, hi = {hi}")]
    InvalidRange {
        /// Lower bound given.
        lo: f64,
        /// Upper bound given.
        hi: f64,
    },
    /// The target device cannot be used.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Why a device could not be opened.
///
/// ```
/// use kernel_runtime::{Device, DeviceError};
/// assert!(matches!(Device::cuda(1), Err(DeviceError::CudaUnavailable { ordinal: 1, .. })));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The CUDA device cannot be used (no backend, no driver, no such GPU).
    #[error("cuda device {ordinal} is not available: {reason}")]
    CudaUnavailable {
        /// The ordinal asked for.
        ordinal: usize,
        /// Why not.
        reason: String,
    },
}
