//! Error types at the runtime's boundaries: launching ([`LaunchError`]),
//! building tensors ([`TensorError`]) and opening devices ([`DeviceError`]).

use std::path::PathBuf;

use crate::cpu::{AssertionFailure, KernelError};
use crate::dtype::DTypeKind;

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
    /// No PTX file for the kernel's crate was found for this GPU.
    #[error(
        "no PTX for kernel `{kernel}` (crate `{crate_name}`, {archs}): searched {}; \
         run `cargo xtask build-ptx` (or point KERNEL_PTX_DIR at a directory holding `{crate_name}.ptx`)",
        display_paths(searched)
    )]
    PtxNotFound {
        /// The kernel's name.
        kernel: &'static str,
        /// The crate whose PTX was looked for (`<crate_name>.ptx`).
        crate_name: &'static str,
        /// The architectures tried, best first (e.g. `sm_90a, sm_90`).
        archs: String,
        /// Every path looked at, in order.
        searched: Vec<PathBuf>,
    },
    /// The CUDA driver rejected a PTX file (bad or too new PTX, wrong architecture, unreadable file).
    #[error(
        "could not load the PTX of kernel `{kernel}` from {}: {code}: {message}; \
         rebuild it with `cargo xtask build-ptx`",
        path.display()
    )]
    PtxLoad {
        /// The kernel's name.
        kernel: &'static str,
        /// The PTX file.
        path: PathBuf,
        /// The CUDA error name (e.g. `CUDA_ERROR_INVALID_PTX`), or `io` for a file error.
        code: String,
        /// The error's description, with the JIT compiler's log when it gave one.
        message: String,
    },
    /// The PTX file has no entry point for this instance: it was built before the kernel changed,
    /// or for other kernels only.
    #[error(
        "the PTX {} has no entry `{entry}` for kernel `{kernel}`: the PTX is stale, or was built \
         for other kernels only (`build-ptx --kernel`, `KERNEL_BUILD_KERNELS`); rebuild it with \
         `cargo xtask build-ptx`",
        path.display()
    )]
    MissingEntry {
        /// The kernel's name.
        kernel: &'static str,
        /// The entry point looked for.
        entry: &'static str,
        /// The PTX file searched.
        path: PathBuf,
    },
    /// The instance needs more shared memory per block than the device offers.
    #[error(
        "kernel `{kernel}` (entry `{entry}`) needs {requested} bytes of shared memory per block, \
         but this device allows at most {available}: choose smaller blocks or fewer stages"
    )]
    SharedMemory {
        /// The kernel's name.
        kernel: &'static str,
        /// The entry point (instance).
        entry: &'static str,
        /// Bytes needed (dynamic plus static shared memory).
        requested: u64,
        /// The device's opt-in maximum per block.
        available: u64,
    },
    /// The instance runs more threads per block than the device (or the
    /// compiled entry, because of its register use) allows.
    #[error(
        "kernel `{kernel}` (entry `{entry}`) runs {threads} threads per block, but at most {max} \
         can run ({reason}): use fewer warps"
    )]
    BlockSize {
        /// The kernel's name.
        kernel: &'static str,
        /// The entry point (instance).
        entry: &'static str,
        /// Threads per block of the instance (`32 * num_warps`).
        threads: u32,
        /// The largest block that can run.
        max: u32,
        /// Which limit applies.
        reason: String,
    },
    /// A CUDA driver call of the launch failed (the launch itself, setting an
    /// attribute, or the kernel's execution when `KERNEL_SYNC=1`).
    #[error("kernel `{kernel}` (entry `{entry}`): {op} failed: {code}: {message}")]
    Cuda {
        /// The kernel's name.
        kernel: &'static str,
        /// The entry point (instance).
        entry: &'static str,
        /// What was being done (e.g. `cuLaunchKernel`).
        op: String,
        /// The CUDA error name (e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`).
        code: String,
        /// The error's description.
        message: String,
    },
    /// The launch device failed outside a kernel (context, stream).
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// A tensor operation of the launch failed (e.g. copying arguments for autotuning).
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// `a, b, c` for a list of paths.
fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "nothing".to_string();
    }
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
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
    /// The shape has more elements than any allocation can hold: the element count overflows
    /// `usize`, or its size in bytes exceeds `isize::MAX`.
    #[error("shape {shape:?} has more elements than fit in memory: {}", overflow_detail(shape, *elem_bytes))]
    ShapeOverflow {
        /// The requested shape.
        shape: Vec<usize>,
        /// Bytes per element of the tensor's dtype.
        elem_bytes: usize,
    },
    /// The memory for a tensor could not be allocated (on the CPU: the allocator refused;
    /// on a GPU: the driver reported `CUDA_ERROR_OUT_OF_MEMORY`).
    #[error("cannot allocate {bytes} bytes on {device}: {reason}")]
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
        /// Where: `cpu`, `cuda:N`, or `host memory` for the staging copy of a GPU tensor.
        device: String,
        /// What the allocator or driver said.
        reason: String,
    },
    /// `narrow` was asked for indices past the end of the dimension.
    #[error("narrow(dim {dim}, start {start}, len {len}) is out of range: dimension {dim} has size {size}")]
    NarrowOutOfRange {
        /// The dimension narrowed.
        dim: usize,
        /// First index asked for.
        start: usize,
        /// Number of indices asked for.
        len: usize,
        /// The dimension's size.
        size: usize,
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
    /// A view over memory given by the caller has as many strides as `strides` holds, but
    /// its shape has another rank.
    #[error("a view of shape {shape:?} needs {} strides, found {strides:?}", shape.len())]
    RankMismatch {
        /// The shape given.
        shape: Vec<usize>,
        /// The strides given.
        strides: Vec<usize>,
    },
    /// A view over memory given by the caller reaches past its end.
    #[error(
        "a view of shape {shape:?} with strides {strides:?} reaches element {last} of memory that \
         holds {len} elements"
    )]
    ViewOutOfBounds {
        /// The shape given.
        shape: Vec<usize>,
        /// The strides given (in elements).
        strides: Vec<usize>,
        /// The index of the view's last element from the start of the memory.
        last: u128,
        /// Elements of the memory.
        len: usize,
    },
    /// Memory given by the caller has a negative stride (a reversed view), which a
    /// [`Tensor`](crate::Tensor) cannot represent.
    #[error("dimension {dim} has stride {stride}: views with negative strides are not supported")]
    NegativeStride {
        /// The dimension.
        dim: usize,
        /// Its stride, in elements.
        stride: i64,
    },
    /// The address of memory given by the caller is not aligned for the element type.
    #[error("address {addr:#x} is not aligned for {dtype} elements (alignment {align} bytes)")]
    Misaligned {
        /// The address of the first element.
        addr: u64,
        /// The tensor's element type.
        dtype: DTypeKind,
        /// The alignment it needs, in bytes.
        align: usize,
    },
    /// The address of memory given by the caller is null, for a view with elements.
    #[error("the memory's address is null, but the view has {numel} elements")]
    NullPointer {
        /// Elements of the view.
        numel: usize,
    },
    /// Imported memory holds elements of another type than the tensor's.
    #[error("the memory holds {found} elements, but the tensor's element type is {expected}")]
    DTypeMismatch {
        /// The tensor's element type.
        expected: DTypeKind,
        /// The element type of the memory (a DLPack type code such as `complex64` when it is
        /// not one of [`DTypeKind`]).
        found: String,
    },
    /// Memory given by the caller is on another device than the one asked for, or in another
    /// CUDA context than this crate's (the device's primary context).
    #[error("the memory is on {found}, but the view was asked for on {expected}")]
    WrongDevice {
        /// The device asked for (or the one this crate uses).
        expected: String,
        /// Where the memory is.
        found: String,
    },
    /// Imported memory is on a kind of device this crate does not run kernels on
    /// (a DLPack device type such as ROCm or Metal).
    #[error("the memory is on {device}, which kernel-runtime does not support (it runs on the CPU and on CUDA GPUs)")]
    UnsupportedDevice {
        /// The device as the producer named it.
        device: String,
    },
    /// An imported DLPack tensor is marked read-only, but kernels may write to any tensor.
    #[error("the DLPack tensor is read-only; kernel-runtime's tensors are writable, so import a writable one (or a copy)")]
    ReadOnly,
    /// An imported DLPack tensor's descriptor is invalid (null shape, negative dimension, ...).
    #[error("invalid DLPack tensor: {reason}")]
    InvalidDlpack {
        /// What the validation found.
        reason: String,
    },
    /// The target device cannot be used.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Why the elements of `shape` do not fit: the count overflows, or the bytes do.
fn overflow_detail(shape: &[usize], elem_bytes: usize) -> String {
    match shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n)) {
        None => "the element count overflows usize".to_string(),
        Some(n) => format!(
            "{n} elements of {elem_bytes} bytes exceed the largest possible allocation ({} bytes)",
            isize::MAX
        ),
    }
}

/// Why a device could not be opened or used.
///
/// ```
/// use kernel_runtime::{Device, DeviceError};
/// // On a machine without the NVIDIA driver:
/// if let Err(DeviceError::NoDriver { .. }) = Device::cuda(0) {
///     assert!(Device::best().is_cpu());
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The CUDA driver library (`libcuda.so`) cannot be loaded: no NVIDIA driver.
    #[error("no CUDA driver found (libcuda.so): {reason}")]
    NoDriver {
        /// What was tried and what to do.
        reason: String,
    },
    /// This build of `kernel-runtime` has no CUDA backend (its `cuda` feature is off).
    #[error(
        "the CUDA backend is not built: kernel-runtime was compiled without its `cuda` feature \
         (enable it, or run kernels on the CPU with `Device::cpu()`)"
    )]
    CudaNotBuilt,
    /// There is no CUDA device with this ordinal.
    #[error("cuda device {ordinal} does not exist: this machine has {count} CUDA device{}", if *count == 1 { "" } else { "s" })]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// The CUDA device exists but cannot be used (e.g. a compute capability
    /// without a PTX target).
    #[error("cuda device {ordinal} is not available: {reason}")]
    CudaUnavailable {
        /// The ordinal asked for.
        ordinal: usize,
        /// Why not.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("{op} on {device} failed: {code}: {message}")]
    Driver {
        /// The device (`cuda:N`, or `cuda` before one is chosen).
        device: String,
        /// What was being done (e.g. `cuMemAlloc (4096 bytes)`).
        op: String,
        /// The CUDA error name (e.g. `CUDA_ERROR_OUT_OF_MEMORY`).
        code: String,
        /// The error's description.
        message: String,
    },
    /// The driver binding panicked (typically: the installed driver lacks a
    /// function of the CUDA 13.0 API this build uses).
    #[error("the CUDA driver binding failed in {op}: {message} (is the NVIDIA driver older than CUDA 13.0?)")]
    DriverPanic {
        /// What was being done.
        op: String,
        /// The panic message.
        message: String,
    },
    /// A kernel on the GPU computed an address outside the buffer of one of its pointer
    /// arguments (e.g. a wrong stride or a too short tensor). Every access is checked: the
    /// faulty one was skipped (a load gave its `other` value) and the first of the launches
    /// since the last synchronization is reported here.
    #[error(
        "out-of-bounds access in kernel `{kernel}` (entry `{entry}`) on {device} at line {line}: \
         index {index} of argument `{arg}` (length {len}); the access was skipped"
    )]
    OutOfBounds {
        /// The device.
        device: String,
        /// The kernel that faulted.
        kernel: &'static str,
        /// Its instance (PTX entry).
        entry: &'static str,
        /// The pointer parameter.
        arg: &'static str,
        /// The kernel's source line of the load or store.
        line: u32,
        /// The element index relative to the pointer argument (negative: before it).
        index: i64,
        /// The elements addressable from the pointer argument.
        len: u64,
    },
    /// A caller's CUDA stream cannot carry this device's launches: it belongs to another
    /// device or CUDA context than the device's primary context.
    #[error("the stream cannot carry launches on {device}: {reason}")]
    StreamMismatch {
        /// The device (`cuda:N`).
        device: String,
        /// Where the stream belongs.
        reason: String,
    },
    /// A `device_assert` of a kernel on the GPU was false. The program went on (as the other
    /// programs did); the first failure of the launches since the last synchronization is
    /// reported here.
    #[error("{failure} (on {device}, entry `{entry}`)")]
    Assertion {
        /// The device.
        device: String,
        /// The instance (PTX entry).
        entry: &'static str,
        /// What failed, where.
        failure: AssertionFailure,
    },
}

impl DeviceError {
    /// The failed `device_assert` this error reports, if it is one.
    pub fn assertion(&self) -> Option<&AssertionFailure> {
        match self {
            DeviceError::Assertion { failure, .. } => Some(failure),
            _ => None,
        }
    }
}

impl LaunchError {
    /// The failed `device_assert` this error reports, if it is one: on the CPU backend, where
    /// the launch returns it, or on the GPU when the launch synchronizes (`KERNEL_SYNC=1`);
    /// otherwise the GPU reports it at the next synchronization ([`DeviceError::assertion`]).
    ///
    /// ```
    /// use kernel_runtime::LaunchError;
    /// use kernel_runtime::cpu::{AssertionFailure, KernelError};
    /// let f = AssertionFailure { kernel: "k", line: 1, column: 1, condition: "x > 0".into(), message: String::new(), program: [0; 3], index: None, operands: vec![] };
    /// assert_eq!(LaunchError::Kernel(KernelError::Assertion(f.clone())).assertion(), Some(&f));
    /// ```
    pub fn assertion(&self) -> Option<&AssertionFailure> {
        match self {
            LaunchError::Kernel(KernelError::Assertion(f)) => Some(f),
            LaunchError::Device(e) => e.assertion(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_entry_names_both_causes_and_the_fix() {
        let e = LaunchError::MissingEntry { kernel: "softmax", entry: "softmax__B_64", path: PathBuf::from("target/ptx/sm_90a/examples.ptx") };
        assert_eq!(
            e.to_string(),
            "the PTX target/ptx/sm_90a/examples.ptx has no entry `softmax__B_64` for kernel `softmax`: the PTX is stale, or was \
             built for other kernels only (`build-ptx --kernel`, `KERNEL_BUILD_KERNELS`); rebuild it with `cargo xtask build-ptx`"
        );
    }
}
