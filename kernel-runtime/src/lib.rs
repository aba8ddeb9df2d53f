//! # kernel-runtime
//!
//! The runtime of a Triton-style block kernel language for Rust. Kernels are
//! written under `#[kernel]` (crate `kernel-macros`); the code it generates
//! launches them through this crate, which provides:
//!
//! - [`Device`]: the CPU (rayon) or a CUDA GPU ([`Device::best`] picks one);
//! - [`Tensor`]: strided, shared n-dimensional arrays of [`DType`] elements
//!   (`f16`, `bf16`, `f32`, `f64`, the 8-bit floats `f8e4m3` and `f8e5m2`, and the integers
//!   `i8` to `i64`, `u8` to `u32`);
//! - launch parameters: [`Grid`] (a tuple or a closure of the meta-parameters,
//!   with [`cdiv`]), [`Config`] / [`MetaValue`] / [`Func`] (Triton's
//!   `triton.Config`), and [`LaunchError`];
//! - the CPU backend ([`cpu`], reached by generated code through
//!   `__private::cpu`): block values, broadcasting, `dot`, reductions and
//!   bounds-checked `load`/`store` that report the kernel, source line and
//!   index instead of crashing;
//! - autotuning: the first GPU launch of an autotuned kernel for a new key times
//!   every config (CUDA events) and keeps the fastest, cached in memory and on
//!   disk (keyed by kernel, instance, key values, dtypes, GPU, PTX hash and
//!   this crate's version);
//! - [`testing`]: `allclose`, `assert_close`, a reference matmul, `do_bench`
//!   (wall clock) and `do_bench_gpu` (Triton's `do_bench`: CUDA events, L2 flush);
//! - `baseline` (feature `cuda`): cuBLAS f16 matmul to compare kernels against;
//! - interop without copies: [`Tensor`] views over memory others own (host memory, and with
//!   `cuda` cudarc slices and raw device pointers), launches on a caller's CUDA stream
//!   (`ExternalStream`, `with_stream`), and DLPack import and export (feature `dlpack`).
//!
//! GPUs are driven through `cudarc` (re-exported with the `cuda` feature), which loads the
//! NVIDIA driver at run time: the crate builds and runs on machines without CUDA,
//! where [`Device::cuda`] returns [`DeviceError::NoDriver`] and
//! [`Device::best`] is the CPU. Kernels run on the GPU from the PTX that
//! `cargo xtask build-ptx` writes (see [`__private::launch`] for where it is
//! looked for).
//!
//! # Features
//!
//! - `cuda` (default): the CUDA backend (`cudarc`, `baseline`, `foreign`,
//!   `Device::cuda_stream`, `Tensor::cuda_slice`, the device-memory views such as
//!   `Tensor::from_cuda_slice`, `ExternalStream`, `with_stream`). Without it the crate has no
//!   `cudarc` dependency, [`Device::cuda`] returns [`DeviceError::CudaNotBuilt`] and kernels
//!   run on the CPU.
//! - `dlpack`: `Tensor::from_dlpack` and `Tensor::to_dlpack` through `dlpark` (re-exported),
//!   for PyTorch, JAX, CuPy, NumPy and other DLPack libraries; CUDA tensors with `cuda`.
//!
//! # Settings and environment variables
//!
//! [`Settings`] holds the process-wide settings: set by code
//! ([`Settings::install`], before the first launch) first, environment variables
//! ([`Settings::from_env`]) second. See its table for each field's variable and default:
//! `KERNEL_CACHE_DIR`, `KERNEL_PTX_DIR`, `KERNEL_JIT_PTX`, `KERNEL_SYNC`,
//! `KERNEL_PRINT_AUTOTUNING`, `KERNEL_SPLIT`, `KERNEL_CUBLAS_DIR`.
//! `KERNEL_TEST_DEVICE=cuda` runs this crate's GPU tests (`tests/cuda.rs`), as it runs the
//! workspace's integration tests on the GPU; without it they print a note and skip.
//!
//! # Messages
//!
//! Warnings (a stale PTX or autotuning cache, an invalid variable) and reports (autotuning
//! decisions and progress) go through the [`log`](https://docs.rs/log) crate, targets
//! `kernel_runtime::*`: the application's logger decides whether and where they appear.
//!
//! ```
//! use kernel_runtime::testing::assert_close;
//! use kernel_runtime::{cdiv, Device, Grid, Tensor};
//!
//! let dev = Device::best();
//! let x = Tensor::<f32>::randn(&dev, &[1000], 0).unwrap();
//! assert_eq!(x.shape(), &[1000]);
//! struct Meta { block: usize }
//! let grid = |m: &Meta| (cdiv(x.numel(), m.block),);
//! assert_eq!(grid.dims(&Meta { block: 256 }).unwrap(), [4, 1, 1]);
//! assert_close(&x, &x.to_f64_vec()).unwrap();
//! ```

#![warn(missing_docs)]

mod abi;
mod autotune;
#[cfg(feature = "cuda")]
pub mod baseline;
mod config;
mod convert;
pub mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod device;
mod dtype;
mod error;
mod grid;
mod launch;
mod settings;
mod split;
#[cfg(feature = "cuda")]
mod stream;
#[cfg(feature = "cuda")]
pub mod foreign;
mod tensor;
pub mod testing;

pub use config::{Config, Func, MetaValue};
pub use device::Device;
pub use dtype::{DType, DTypeKind};
pub use error::{DeviceError, LaunchError, TensorError};
pub use grid::{cdiv, Grid, GridDims, GridInt, MAX_GRID_X, MAX_GRID_YZ};
pub use settings::{Settings, SettingsError};
pub use split::{split_plan, wide_plan, with_split, SplitChoice, SplitPlan, SplitPolicy, DEFAULT_MAX_PARTS};
pub use half::{bf16, f16};
/// The 8-bit floats: `f8e4m3` (4 exponent bits, 3 mantissa bits, no infinities; PyTorch's
/// `float8_e4m3fn`) and `f8e5m2` (PyTorch's `float8_e5m2`), the `float8` crate's types.
pub use float8::{F8E4M3 as f8e4m3, F8E5M2 as f8e5m2};
pub use tensor::Tensor;
#[cfg(feature = "cuda")]
pub use stream::{with_stream, ExternalStream};
#[cfg(feature = "dlpack")]
pub use tensor::dlpack::dlpack_dtype;

/// The DLPack binding this crate uses ([`Tensor::from_dlpack`], [`Tensor::to_dlpack`]), for
/// its managed-tensor types and, with its `pyo3` feature, Python capsules (with the `dlpack`
/// feature).
#[cfg(feature = "dlpack")]
pub use dlpark;

/// The CUDA driver binding this crate uses, for calling other CUDA libraries
/// (cuBLAS, ...) on [`Device::cuda_stream`] with [`Tensor::cuda_slice`]
/// (with the `cuda` feature).
#[cfg(feature = "cuda")]
pub use cudarc;

/// What code generated by `#[kernel]` uses; not a public API
/// (see `docs/CPU_BACKEND_CONTRACT.md`).
#[doc(hidden)]
pub mod __private {
    pub use crate::cpu;
    pub use crate::autotune::Tuning;
    pub use crate::abi::{AssertInfo, EmbeddedModule, Hidden, InstanceInfo, KernelInfo, ModuleInfo, ParamInfo, ParamKind, TmaOperand};
    pub use crate::launch::{autotune, launch, launch_cpu, ptr_arg, specialization, PtrArg, ScalarArg};
    pub use crate::{
        with_split, Config, DType, DTypeKind, Device, Func, Grid, GridDims, LaunchError, MetaValue, Tensor,
    };
    pub use half::{bf16, f16};
    pub use crate::{f8e4m3, f8e5m2};
}
