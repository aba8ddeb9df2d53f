//! Kernels compiled by other tools (a cubin or PTX image, e.g. the one Triton compiled for
//! its tutorial matmul), loaded on a device and launched on its stream, so that a benchmark
//! times them in the same process, with the same timing loop and against the same cuBLAS as
//! our kernels.
//!
//! A [`ForeignKernel`] knows only what its caller declares: the entry's name, its parameter
//! kinds ([`ForeignParam`]), threads per block and dynamic shared memory. Launch arguments
//! are checked against those declarations (count, kinds, the tensors' device), but what the
//! kernel does with them cannot be: [`ForeignKernel::launch`] is `unsafe`.
//!
//! ```
//! use kernel_runtime::foreign::{ForeignError, ForeignKernel, ForeignParam};
//! use kernel_runtime::Device;
//! // On the CPU there is nothing to load a GPU image into.
//! let err = ForeignKernel::load(&Device::cpu(), b"", "k", &[ForeignParam::Ptr], 128, 0).unwrap_err();
//! assert!(matches!(err, ForeignError::NotOnGpu { .. }), "{err}");
//! ```

use std::ffi::{c_void, CString};
use std::fmt;
use std::sync::Arc;

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUfunction_attribute as FnAttr};

use crate::cuda::CudaDevice;
use crate::error::DeviceError;
use crate::tensor::Tensor;
use crate::{DType, Device};

/// The kind of one parameter of a foreign kernel's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForeignParam {
    /// A 64-bit device address (`.u64` / `.b64` in PTX).
    Ptr,
    /// A 32-bit integer.
    I32,
    /// A 64-bit integer.
    I64,
    /// A 32-bit float.
    F32,
}

/// One launch argument of a foreign kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ForeignArg {
    /// The address of a tensor's first element ([`ForeignArg::tensor`]), with the ordinal of
    /// its GPU.
    Ptr {
        /// Device address.
        addr: u64,
        /// The GPU the memory is on.
        ordinal: usize,
    },
    /// A null pointer (e.g. a scratch buffer the kernel does not use).
    Null,
    /// A 32-bit integer.
    I32(i32),
    /// A 64-bit integer.
    I64(i64),
    /// A 32-bit float.
    F32(f32),
}

impl ForeignArg {
    /// The address of `t`'s first element (its storage offset included).
    ///
    /// # Errors
    /// [`ForeignError::NotOnGpu`] for a tensor in host memory.
    pub fn tensor<T: DType>(t: &Tensor<T>) -> Result<ForeignArg, ForeignError> {
        match (t.device_addr(), t.device().cuda_device()) {
            (Some(addr), Some(dev)) => Ok(ForeignArg::Ptr { addr, ordinal: dev.ordinal }),
            _ => Err(ForeignError::NotOnGpu { device: t.device().to_string() }),
        }
    }

    fn fits(&self, p: ForeignParam) -> bool {
        matches!(
            (self, p),
            (ForeignArg::Ptr { .. } | ForeignArg::Null, ForeignParam::Ptr)
                | (ForeignArg::I32(_), ForeignParam::I32)
                | (ForeignArg::I64(_), ForeignParam::I64)
                | (ForeignArg::F32(_), ForeignParam::F32)
        )
    }

    /// The parameter's bytes in the low end of a 64-bit slot (the driver copies the size the
    /// entry declares).
    fn slot(&self) -> u64 {
        match *self {
            ForeignArg::Ptr { addr, .. } => addr,
            ForeignArg::Null => 0,
            ForeignArg::I32(v) => u64::from(v as u32),
            ForeignArg::I64(v) => v as u64,
            ForeignArg::F32(v) => u64::from(v.to_bits()),
        }
    }
}

impl fmt::Display for ForeignParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForeignParam::Ptr => "pointer",
            ForeignParam::I32 => "i32",
            ForeignParam::I64 => "i64",
            ForeignParam::F32 => "f32",
        })
    }
}

/// Why a foreign kernel could not be loaded or launched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ForeignError {
    /// The device, or a tensor argument, is not a GPU.
    #[error("foreign kernels run on a CUDA device, not on {device}")]
    NotOnGpu {
        /// The device named.
        device: String,
    },
    /// The arguments do not match the declared parameters.
    #[error("kernel `{kernel}`: {reason}")]
    Arguments {
        /// The entry's name.
        kernel: String,
        /// What differs, and what was expected.
        reason: String,
    },
    /// The block does not fit the device or the entry.
    #[error("kernel `{kernel}`: {reason}")]
    Launch {
        /// The entry's name.
        kernel: String,
        /// The limit and the request.
        reason: String,
    },
    /// A driver call failed (loading the image, finding the entry, launching).
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// A loaded foreign entry point (the module stays loaded while this lives).
pub struct ForeignKernel {
    dev: Arc<CudaDevice>,
    module: sys::CUmodule,
    function: sys::CUfunction,
    name: String,
    params: Vec<ForeignParam>,
    threads: u32,
    shared_bytes: u32,
}

impl fmt::Debug for ForeignKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ForeignKernel")
            .field("device", &self.dev.label)
            .field("name", &self.name)
            .field("params", &self.params)
            .field("threads", &self.threads)
            .field("shared_bytes", &self.shared_bytes)
            .finish()
    }
}

// SAFETY: the module and function handles may be used from any thread once the context is
// bound; every use binds it first (`CudaDevice::call`), and neither handle is mutated.
unsafe impl Send for ForeignKernel {}
// SAFETY: as above.
unsafe impl Sync for ForeignKernel {}

impl Drop for ForeignKernel {
    fn drop(&mut self) {
        let module = self.module;
        // Work queued on the stream may still run the kernel; unloading waits for nothing,
        // so let it finish first (errors are the stream's, reported by its next user).
        let _ = self.dev.call("cuStreamSynchronize", || self.dev.stream.synchronize());
        // SAFETY: the module was loaded by `load` and is unloaded once, after the stream's work.
        let _ = self.dev.call("cuModuleUnload", || unsafe { result::module::unload(module) });
    }
}

/// Checks `args` against `params` for a launch of `kernel` on the GPU with `ordinal`.
fn check_args(kernel: &str, params: &[ForeignParam], args: &[ForeignArg], ordinal: usize) -> Result<(), ForeignError> {
    let wrong = |reason: String| Err(ForeignError::Arguments { kernel: kernel.to_string(), reason });
    if args.len() != params.len() {
        return wrong(format!("{} arguments given, the entry declares {} parameters", args.len(), params.len()));
    }
    for (i, (a, p)) in args.iter().zip(params).enumerate() {
        if !a.fits(*p) {
            return wrong(format!("argument {i} is {a:?}, parameter {i} is a {p}"));
        }
        if let ForeignArg::Ptr { ordinal: o, .. } = a {
            if *o != ordinal {
                return wrong(format!("argument {i} is memory of cuda:{o}, the kernel is loaded on cuda:{ordinal}"));
            }
        }
    }
    Ok(())
}

impl ForeignKernel {
    /// Loads `image` (a cubin, or PTX text) on `device` and finds entry `name`, which takes
    /// `params` and runs blocks of `threads` threads with `shared_bytes` of dynamic shared
    /// memory (opting in above 48 KiB).
    ///
    /// # Errors
    /// [`ForeignError::NotOnGpu`] on the CPU; [`ForeignError::Launch`] when the block needs
    /// more threads or shared memory than the device or the entry allows;
    /// [`ForeignError::Device`] when the driver rejects the image or has no such entry.
    pub fn load(
        device: &Device,
        image: &[u8],
        name: &str,
        params: &[ForeignParam],
        threads: u32,
        shared_bytes: u32,
    ) -> Result<ForeignKernel, ForeignError> {
        let Some(dev) = device.cuda_device() else {
            return Err(ForeignError::NotOnGpu { device: device.to_string() });
        };
        let limit = |reason: String| Err(ForeignError::Launch { kernel: name.to_string(), reason });
        if threads == 0 || threads > dev.max_threads_per_block {
            return limit(format!("{threads} threads per block (the device allows 1..={})", dev.max_threads_per_block));
        }
        if shared_bytes > dev.max_shared_optin {
            return limit(format!("{shared_bytes} bytes of shared memory per block (the device allows {})", dev.max_shared_optin));
        }
        // The driver reads PTX up to a NUL and a cubin by its header: one copy with a NUL
        // after it serves both.
        let mut owned = image.to_vec();
        owned.push(0);
        let entry = CString::new(name).map_err(|_| ForeignError::Arguments {
            kernel: name.to_string(),
            reason: "the entry name contains a NUL byte".into(),
        })?;
        // SAFETY: `owned` is a readable image that outlives the call (the driver copies it).
        let module = dev.call(format!("cuModuleLoadData ({name})"), || unsafe { result::module::load_data(owned.as_ptr().cast::<c_void>()) })?;
        // Owned from here: dropping `kernel` unloads the module whatever fails next.
        let mut kernel = ForeignKernel {
            dev: Arc::clone(dev),
            module,
            function: std::ptr::null_mut(),
            name: name.to_string(),
            params: params.to_vec(),
            threads,
            shared_bytes,
        };
        // SAFETY: the module is loaded.
        kernel.function = dev.call(format!("cuModuleGetFunction({name})"), || unsafe { result::module::get_function(module, entry) })?;
        let function = kernel.function;
        // SAFETY: `function` belongs to the loaded module.
        let max_threads = dev.call("cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)", || unsafe {
            result::function::get_function_attribute(function, FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        })?;
        if i64::from(threads) > i64::from(max_threads) {
            return limit(format!("{threads} threads per block, the entry allows {max_threads} (its registers per thread)"));
        }
        if shared_bytes > 48 * 1024 {
            let value = i32::try_from(shared_bytes).unwrap_or(i32::MAX);
            // SAFETY: `function` belongs to the loaded module.
            dev.call(format!("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = {shared_bytes})"), || unsafe {
                result::function::set_function_attribute(function, FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value)
            })?;
        }
        Ok(kernel)
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues a launch over `grid` blocks on the device's stream.
    ///
    /// # Safety
    /// The kernel must only access memory inside the tensors its pointer arguments come from
    /// (the driver cannot check what a foreign kernel reads and writes), and those tensors
    /// must live until the launch has finished (synchronize the device before dropping them).
    ///
    /// # Errors
    /// [`ForeignError::Arguments`] when `args` do not match the declared parameters or
    /// point into another GPU's memory; [`ForeignError::Launch`] for a grid over the device's
    /// limits; [`ForeignError::Device`] when the driver fails.
    pub unsafe fn launch(&self, grid: [u32; 3], args: &[ForeignArg]) -> Result<(), ForeignError> {
        check_args(&self.name, &self.params, args, self.dev.ordinal)?;
        if grid.contains(&0) || grid.iter().zip(self.dev.max_grid).any(|(&g, max)| g > max) {
            return Err(ForeignError::Launch {
                kernel: self.name.clone(),
                reason: format!("grid {grid:?} (the device allows 1..={:?} blocks per dimension)", self.dev.max_grid),
            });
        }
        let mut slots: Vec<u64> = args.iter().map(ForeignArg::slot).collect();
        let mut ptrs: Vec<*mut c_void> = slots.iter_mut().map(|s| std::ptr::from_mut(s).cast::<c_void>()).collect();
        let (function, stream) = (self.function, self.dev.stream.cu_stream());
        let (threads, shared) = (self.threads, self.shared_bytes);
        // SAFETY: `function` is a loaded entry whose parameters are `self.params` (checked
        // above; each slot holds the value in its low bytes, little-endian); `slots` outlives
        // the call, which copies the values. Memory safety of the kernel is the caller's.
        self.dev.call(format!("cuLaunchKernel ({})", self.name), || unsafe {
            result::launch_kernel(function, (grid[0], grid[1], grid[2]), (threads, 1, 1), shared, stream, &mut ptrs)
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_against_the_declared_parameters() {
        let params = [ForeignParam::Ptr, ForeignParam::I32, ForeignParam::Ptr, ForeignParam::F32];
        let p = ForeignArg::Ptr { addr: 0x1000, ordinal: 0 };
        assert_eq!(check_args("k", &params, &[p, ForeignArg::I32(3), ForeignArg::Null, ForeignArg::F32(1.0)], 0), Ok(()));
        let err = check_args("k", &params, &[p, ForeignArg::I32(3)], 0).unwrap_err();
        assert_eq!(err.to_string(), "kernel `k`: 2 arguments given, the entry declares 4 parameters");
        let err = check_args("k", &params, &[p, ForeignArg::I64(3), p, ForeignArg::F32(1.0)], 0).unwrap_err();
        assert_eq!(err.to_string(), "kernel `k`: argument 1 is I64(3), parameter 1 is a i32");
        let err = check_args("k", &params, &[p, ForeignArg::I32(3), ForeignArg::Ptr { addr: 8, ordinal: 1 }, ForeignArg::F32(1.0)], 0).unwrap_err();
        assert_eq!(err.to_string(), "kernel `k`: argument 2 is memory of cuda:1, the kernel is loaded on cuda:0");
    }

    #[test]
    fn slots_hold_the_values_in_their_low_bytes() {
        assert_eq!(ForeignArg::I32(-1).slot(), 0xffff_ffff);
        assert_eq!(ForeignArg::I64(-1).slot(), u64::MAX);
        assert_eq!(ForeignArg::F32(1.0).slot(), 0x3f80_0000);
        assert_eq!(ForeignArg::Null.slot(), 0);
        assert_eq!(ForeignArg::Ptr { addr: 0xdead_0000, ordinal: 0 }.slot(), 0xdead_0000);
    }

    #[test]
    fn host_tensors_have_no_device_address() {
        let t = Tensor::<f32>::zeros(&Device::cpu(), &[4]).unwrap();
        assert_eq!(ForeignArg::tensor(&t).unwrap_err(), ForeignError::NotOnGpu { device: "cpu".into() });
    }
}
