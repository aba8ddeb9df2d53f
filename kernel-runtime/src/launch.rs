//! Launch plumbing shared by generated launchers: static kernel descriptions
//! ([`KernelInfo`]), type-erased pointer arguments ([`PtrArg`]), the launcher
//! that dispatches on the arguments' device ([`launch`]) and the CPU launcher
//! ([`launch_cpu`]).

use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use rayon::prelude::*;

use crate::cpu::{Ctx, KernelError, INTERNAL_PREFIX};
#[cfg(feature = "cuda")]
use crate::cuda;
use crate::device::{Device, DeviceKey};
use crate::dtype::sealed::Cells;
use crate::dtype::{DType, DTypeKind};
use crate::error::LaunchError;
use crate::grid::check_dims;
use crate::tensor::{StorageRef, Tensor};

use crate::abi::{KernelInfo, ParamInfo};

/// A scalar kernel argument, in declaration order among the scalar parameters.
///
/// ```
/// use kernel_runtime::__private::ScalarArg;
/// use kernel_runtime::DTypeKind;
/// assert_eq!(ScalarArg::I32(7).dtype(), DTypeKind::I32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ScalarArg {
    /// An `i32` parameter.
    I32(i32),
    /// A `u32` parameter.
    U32(u32),
    /// An `i64` parameter.
    I64(i64),
    /// An `i8` parameter.
    I8(i8),
    /// An `i16` parameter.
    I16(i16),
    /// A `u8` parameter.
    U8(u8),
    /// A `u16` parameter.
    U16(u16),
    /// An `f32` parameter.
    F32(f32),
    /// An `f64` parameter.
    F64(f64),
    /// A `bool` parameter (one byte on the device).
    Bool(bool),
}

impl ScalarArg {
    /// The parameter type this value is for.
    ///
    /// ```
    /// use kernel_runtime::__private::ScalarArg;
    /// use kernel_runtime::DTypeKind;
    /// assert_eq!(ScalarArg::Bool(true).dtype(), DTypeKind::Bool);
    /// ```
    pub fn dtype(self) -> DTypeKind {
        match self {
            ScalarArg::I32(_) => DTypeKind::I32,
            ScalarArg::U32(_) => DTypeKind::U32,
            ScalarArg::I64(_) => DTypeKind::I64,
            ScalarArg::I8(_) => DTypeKind::I8,
            ScalarArg::I16(_) => DTypeKind::I16,
            ScalarArg::U8(_) => DTypeKind::U8,
            ScalarArg::U16(_) => DTypeKind::U16,
            ScalarArg::F32(_) => DTypeKind::F32,
            ScalarArg::F64(_) => DTypeKind::F64,
            ScalarArg::Bool(_) => DTypeKind::Bool,
        }
    }
}

/// Chooses the config of an autotuned kernel for this launch: on the CPU backend the first
/// config; on a GPU the fastest config for this key, with the split plan its launch runs
/// under ([`crate::with_split`]; cached in memory and on disk; see the `autotune` module for
/// the key, the cache files and the environment variables). `run(config)` launches once on
/// scratch copies of the arguments.
///
/// # Errors
/// When the kernel's PTX cannot be found or read, or every config fails to launch (the
/// first config's error).
///
/// ```
/// use kernel_runtime::__private::{autotune, KernelInfo, ModuleInfo};
/// static INFO: KernelInfo = KernelInfo {
///     name: "noop", params: &[], configs: &[], key: &[], instances: &[],
///     module: ModuleInfo { crate_name: "doc", manifest_dir: ".", embedded: &[] }, asserts: &[],
/// };
/// assert_eq!(autotune(&INFO, &[], &[], "()", &mut |_| Ok(())).unwrap().config, 0);
/// ```
pub fn autotune(
    info: &'static KernelInfo,
    args: &[PtrArg<'_>],
    key: &[i64],
    instance_key: &str,
    run: &mut dyn FnMut(usize) -> Result<(), LaunchError>,
) -> Result<crate::autotune::Tuning, LaunchError> {
    crate::autotune::autotune(info, args, key, instance_key, run)
}

/// The specialization of a launch, part of its autotuning key (as in Triton, which compiles a
/// kernel per specialization): for each pointer argument whether its address is 16-byte aligned
/// (`a`) or not (`-`), then for each integer scalar argument whether it is 1 (`1`), a multiple
/// of 16 (`d`) or neither (`-`). Launches that differ in layout (a stride of 1 here or there, a
/// transposed operand) or alignment then keep their own decisions.
///
/// ```
/// use kernel_runtime::__private::specialization;
/// assert_eq!(specialization(&[], &[4096, 1, 7, 0, -32]), "|d1-dd");
/// ```
pub fn specialization(args: &[PtrArg<'_>], ints: &[i64]) -> String {
    let ptrs = args.iter().map(|a| match a.mem {
        #[cfg(feature = "cuda")]
        ArgMem::Cuda { ptr, .. } if (ptr + (a.offset * a.kind.size_bytes()) as u64) % 16 == 0 => 'a',
        _ => '-',
    });
    let ints = ints.iter().map(|&v| match v {
        1 => '1',
        v if v % 16 == 0 => 'd',
        _ => '-',
    });
    ptrs.chain(std::iter::once('|')).chain(ints).collect()
}

/// Launches instance `instance` of a kernel on the device its pointer arguments live on
/// (the CPU when it has none).
///
/// Checks first that `args` are the kernel's pointer parameters (in order, with
/// their dtypes, all on one device) and `scalars` its scalar parameters. Then
/// the CPU backend runs `cpu` over the grid ([`launch_cpu`]); a GPU launches the
/// instance's compiled entry point from the PTX of the kernel's crate:
///
/// - the PTX is `$KERNEL_PTX_DIR/<crate>.ptx` when `KERNEL_PTX_DIR` is set, else
///   `target/ptx/<arch>/<crate>.ptx` in the current directory or an ancestor, else
///   under the crate's manifest directory or an ancestor (`<arch>`: `sm_90a` then
///   `sm_90` on compute capability 9.0, `sm_80` on 8.x); it is loaded once per
///   device and file, and each entry resolved once;
/// - the block has `threads` threads (of the instance) and `shared_bytes` of
///   dynamic shared memory (opting in above 48 KiB); pointer parameters receive
///   the address of the tensor's first element (storage offset included);
/// - the launch is asynchronous: a kernel that fails at run time is reported by
///   the next call that waits for the device ([`Device::synchronize`],
///   [`Tensor::to_vec`]), or by the launch itself when `KERNEL_SYNC=1`.
///
/// # Errors
/// [`LaunchError::InvalidArgument`] / [`LaunchError::DeviceMismatch`] for bad
/// arguments, [`LaunchError::InvalidGrid`] / [`LaunchError::BlockSize`] /
/// [`LaunchError::SharedMemory`] for launches over the device's limits,
/// [`LaunchError::PtxNotFound`] / [`LaunchError::PtxLoad`] /
/// [`LaunchError::MissingEntry`] when the compiled PTX is missing or stale,
/// [`LaunchError::Cuda`] when the driver fails, and [`LaunchError::Kernel`] when a
/// CPU program instance fails.
///
/// ```
/// use kernel_runtime::__private::{launch, KernelInfo, ModuleInfo};
/// static INFO: KernelInfo = KernelInfo {
///     name: "noop", params: &[], configs: &[], key: &[], instances: &[],
///     module: ModuleInfo { crate_name: "doc", manifest_dir: ".", embedded: &[] }, asserts: &[],
/// };
/// launch(&INFO, 0, &[], [1, 1, 1], &[], &|_| Ok(())).unwrap();
/// ```
pub fn launch(
    info: &'static KernelInfo,
    instance: usize,
    args: &[PtrArg<'_>],
    grid: [u32; 3],
    scalars: &[ScalarArg],
    cpu: &(dyn Fn(&Ctx<'_>) -> Result<(), KernelError> + Sync),
) -> Result<(), LaunchError> {
    let device = check_args(info, args, None)?;
    check_scalars(info, scalars)?;
    #[cfg(feature = "cuda")]
    if let Some(dev) = device.as_ref().and_then(Device::cuda_device) {
        let grid = check_dims(grid.map(i128::from))?;
        return cuda::launch::launch_cuda(dev, info, instance, args, grid, scalars);
    }
    let _ = (device, instance);
    launch_cpu(info, args, grid, cpu)
}

impl KernelInfo {
    /// The pointer parameters, in order: pointer argument `i` of a launch
    /// (`P::arg(i)`) is the `i`-th of these.
    ///
    /// ```
    /// use kernel_runtime::__private::{KernelInfo, ModuleInfo, ParamInfo, ParamKind};
    /// use kernel_runtime::DTypeKind;
    /// let info = KernelInfo { name: "k", params: &[], configs: &[], key: &[], instances: &[], module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[] };
    /// assert_eq!(info.ptr_params().count(), 0);
    /// ```
    pub fn ptr_params(&self) -> impl Iterator<Item = &'static ParamInfo> + use<> {
        self.params.iter().filter(|p| p.kind.is_ptr())
    }
}

/// A tensor passed to a kernel's pointer parameter, with its dtype erased.
///
/// ```
/// use kernel_runtime::__private::ptr_arg;
/// use kernel_runtime::{Device, DTypeKind, Tensor};
/// let t = Tensor::<f32>::zeros(&Device::cpu(), &[4]).unwrap();
/// let a = ptr_arg("x_ptr", &t);
/// assert_eq!((a.name(), a.dtype()), ("x_ptr", DTypeKind::F32));
/// ```
#[derive(Clone, Copy)]
pub struct PtrArg<'a> {
    pub(crate) name: &'static str,
    pub(crate) kind: DTypeKind,
    pub(crate) device: &'a Device,
    /// The whole storage of the tensor.
    pub(crate) mem: ArgMem<'a>,
    /// The tensor's storage offset: pointer offset 0 is element `offset` of the storage.
    pub(crate) offset: usize,
}

/// The storage of a pointer argument.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ArgMem<'a> {
    /// Host cells (the CPU backend).
    Host(Cells<'a>),
    /// A device allocation: the address of element 0 and the number of elements.
    #[cfg(feature = "cuda")]
    Cuda { ptr: u64, len: usize },
}

impl ArgMem<'_> {
    /// Number of elements of the storage.
    fn len(&self) -> usize {
        match self {
            ArgMem::Host(c) => c.len(),
            #[cfg(feature = "cuda")]
            ArgMem::Cuda { len, .. } => *len,
        }
    }
}

impl fmt::Debug for PtrArg<'_> {
    /// Names the argument without dumping the tensor's storage.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PtrArg")
            .field("name", &self.name)
            .field("dtype", &self.kind)
            .field("device", &format_args!("{}", self.device))
            .field("offset", &self.offset)
            .field("storage_len", &self.mem.len())
            .finish()
    }
}

impl PtrArg<'_> {
    /// The parameter name it is passed as.
    ///
    /// ```
    /// # use kernel_runtime::__private::ptr_arg;
    /// # use kernel_runtime::{Device, Tensor};
    /// # let t = Tensor::<i32>::zeros(&Device::cpu(), &[1]).unwrap();
    /// assert_eq!(ptr_arg("out", &t).name(), "out");
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The tensor's element type.
    ///
    /// ```
    /// # use kernel_runtime::__private::ptr_arg;
    /// # use kernel_runtime::{Device, DTypeKind, Tensor};
    /// # let t = Tensor::<i32>::zeros(&Device::cpu(), &[1]).unwrap();
    /// assert_eq!(ptr_arg("out", &t).dtype(), DTypeKind::I32);
    /// ```
    pub fn dtype(&self) -> DTypeKind {
        self.kind
    }

    /// The tensor's device.
    ///
    /// ```
    /// # use kernel_runtime::__private::ptr_arg;
    /// # use kernel_runtime::{Device, Tensor};
    /// # let t = Tensor::<i32>::zeros(&Device::cpu(), &[1]).unwrap();
    /// assert!(ptr_arg("out", &t).device().is_cpu());
    /// ```
    pub fn device(&self) -> &Device {
        self.device
    }
}

/// Passes tensor `t` as pointer parameter `name`. Pointer offset 0 is the
/// tensor's first element (storage element [`Tensor::storage_offset`], on the
/// CPU backend and on a GPU alike); strides are the kernel's business: pass
/// them as scalar arguments, as in Triton ([`Tensor::strides_i32`]), or refuse
/// views that are not contiguous ([`Tensor::require_contiguous`]).
///
/// ```
/// use kernel_runtime::__private::ptr_arg;
/// use kernel_runtime::{Device, Tensor};
/// let t = Tensor::<f32>::zeros(&Device::cpu(), &[2, 2]).unwrap();
/// let arg = ptr_arg("a_ptr", &t);
/// assert_eq!(arg.name(), "a_ptr");
/// ```
pub fn ptr_arg<'a, T: DType>(name: &'static str, t: &'a Tensor<T>) -> PtrArg<'a> {
    let mem = match t.storage() {
        StorageRef::Cpu(cells) => ArgMem::Host(T::cells(cells)),
        #[cfg(feature = "cuda")]
        StorageRef::Cuda(buf) => ArgMem::Cuda { ptr: buf.device_ptr(), len: buf.len() },
    };
    PtrArg { name, kind: T::KIND, device: t.device(), mem, offset: t.storage_offset() }
}

/// Runs `body` once per program instance of `grid` on the rayon pool.
///
/// Checks first that `args` are the kernel's pointer parameters, in order,
/// with the declared dtypes, all on the CPU. The first instance to fail stops
/// the others (instances not yet started are skipped) and its error is
/// returned (among instances that failed, the one with the smallest linear
/// program id). A panic in `body` (an internal error of generated code)
/// becomes [`KernelError::Internal`].
///
/// # Errors
/// [`LaunchError::InvalidArgument`] / [`LaunchError::DeviceMismatch`] for bad
/// arguments, [`LaunchError::InvalidGrid`] for a grid over the limits, and
/// [`LaunchError::Kernel`] when an instance fails.
///
/// ```
/// use kernel_runtime::__private::{launch_cpu, ptr_arg, KernelInfo, ModuleInfo, ParamInfo, ParamKind};
/// use kernel_runtime::__private::cpu::{full, store, Blk, P, Site};
/// use kernel_runtime::{Device, DTypeKind, Tensor};
/// static INFO: KernelInfo = KernelInfo {
///     name: "fill_kernel",
///     params: &[ParamInfo { name: "y_ptr", kind: ParamKind::Ptr(DTypeKind::I32) }],
///     configs: &[],
///     key: &[],
///     instances: &[],
///     module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
/// };
/// let y = Tensor::<i32>::zeros(&Device::cpu(), &[4]).unwrap();
/// let site = Site { kernel: "fill_kernel", line: 1, column: 1 };
/// launch_cpu(&INFO, &[ptr_arg("y_ptr", &y)], [4, 1, 1], &|ctx| {
///     let pid = ctx.program_id(0);
///     store(ctx, &Blk::scalar(P { buf: 0, off: pid.into() }), &Blk::scalar(pid * pid), None, &site)
/// })
/// .unwrap();
/// assert_eq!(y.to_vec(), vec![0, 1, 4, 9]);
/// ```
pub fn launch_cpu(
    info: &KernelInfo,
    args: &[PtrArg<'_>],
    grid: [u32; 3],
    body: &(dyn Fn(&Ctx<'_>) -> Result<(), KernelError> + Sync),
) -> Result<(), LaunchError> {
    check_args(info, args, Some(&Device::cpu()))?;
    let grid = check_dims(grid.map(i128::from))?;
    let [gx, gy, gz] = grid.map(u64::from);
    let total = gx * gy * gz;
    if total == 0 {
        return Ok(());
    }
    let stop = AtomicBool::new(false);
    let first: Mutex<Option<(u64, KernelError)>> = Mutex::new(None);
    (0..total).into_par_iter().for_each(|linear| {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // Every coordinate is below its grid size, which fits in u32.
        let pid = [(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32];
        let ctx = Ctx::new(info.name, pid, grid, args);
        let result = catch_unwind(AssertUnwindSafe(|| body(&ctx)))
            .unwrap_or_else(|payload| Err(internal_from_panic(info.name, payload)));
        if let Err(e) = result {
            stop.store(true, Ordering::Relaxed);
            let mut slot = first.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.as_ref().is_none_or(|(id, _)| linear < *id) {
                *slot = Some((linear, e));
            }
        }
    });
    match first.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some((_, e)) => Err(LaunchError::Kernel(e)),
        None => Ok(()),
    }
}

/// Checks `args` against the kernel's pointer parameters: count, order, dtypes,
/// and one device for all (`expected`, or the first argument's). Returns the
/// launch device (`None` when there are no pointer arguments and no `expected`).
fn check_args(info: &KernelInfo, args: &[PtrArg<'_>], expected: Option<&Device>) -> Result<Option<Device>, LaunchError> {
    let params: Vec<&ParamInfo> = info.ptr_params().collect();
    if params.len() != args.len() {
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        return Err(LaunchError::InvalidArgument {
            arg: info.name,
            expected: format!("{} pointer arguments ({})", params.len(), names.join(", ")),
            found: format!("{} pointer arguments", args.len()),
        });
    }
    for (param, arg) in params.iter().zip(args) {
        if param.name != arg.name {
            return Err(LaunchError::InvalidArgument {
                arg: param.name,
                expected: format!("pointer argument `{}` here", param.name),
                found: format!("`{}`", arg.name),
            });
        }
        let dtype = param.kind.dtype();
        if dtype != arg.kind {
            return Err(LaunchError::InvalidArgument {
                arg: param.name,
                expected: format!("a tensor of {dtype}"),
                found: format!("a tensor of {}", arg.kind),
            });
        }
    }
    let keys: Vec<(&'static str, DeviceKey)> = args.iter().map(|a| (a.name, a.device.key())).collect();
    check_devices(&keys, expected.map(Device::key))?;
    Ok(expected.or(args.first().map(|a| a.device)).cloned())
}

/// Checks that every argument is on one device: `expected`, or the first
/// argument's. Pure, so that CUDA mismatches are testable without a GPU.
fn check_devices(args: &[(&'static str, DeviceKey)], expected: Option<DeviceKey>) -> Result<(), LaunchError> {
    let (launch, origin) = match (expected, args.first()) {
        (Some(k), _) => (k, None),
        (None, Some(&(name, k))) => (k, Some(name)),
        (None, None) => return Ok(()),
    };
    for &(arg, found) in args {
        if found != launch {
            let expected = match origin {
                Some(first) => format!("{launch} (the device of `{first}`)"),
                None => launch.to_string(),
            };
            return Err(LaunchError::DeviceMismatch { arg, expected, found: found.to_string() });
        }
    }
    Ok(())
}

/// Checks `scalars` against the kernel's scalar parameters (count and types).
fn check_scalars(info: &KernelInfo, scalars: &[ScalarArg]) -> Result<(), LaunchError> {
    let params: Vec<&ParamInfo> = info.params.iter().filter(|p| !p.kind.is_ptr()).collect();
    if params.len() != scalars.len() {
        let names: Vec<&str> = params.iter().map(|p| p.name).collect();
        return Err(LaunchError::InvalidArgument {
            arg: info.name,
            expected: format!("{} scalar arguments ({})", params.len(), names.join(", ")),
            found: format!("{} scalar arguments", scalars.len()),
        });
    }
    for (param, s) in params.iter().zip(scalars) {
        let dtype = param.kind.dtype();
        if dtype != s.dtype() {
            return Err(LaunchError::InvalidArgument {
                arg: param.name,
                expected: format!("a scalar of {dtype}"),
                found: format!("a scalar of {}", s.dtype()),
            });
        }
    }
    Ok(())
}

/// The `KernelError::Internal` for a panic payload.
fn internal_from_panic(kernel: &'static str, payload: Box<dyn Any + Send>) -> KernelError {
    let text = match (payload.downcast_ref::<String>(), payload.downcast_ref::<&str>()) {
        (Some(s), _) => s.as_str(),
        (None, Some(s)) => s,
        (None, None) => "a panic with a non-string payload",
    };
    let message = match text.strip_prefix(INTERNAL_PREFIX) {
        Some(m) => m.to_string(),
        None => format!("panic in the CPU implementation: {text}"),
    };
    KernelError::Internal { kernel, message }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::{arange, load, map1, map2, ptr_add, store, Blk, Num, Site, P};
    use crate::abi::{ModuleInfo, ParamKind};

    static ADD: KernelInfo = KernelInfo {
        name: "add_kernel",
        params: &[
            ParamInfo { name: "x_ptr", kind: ParamKind::Ptr(DTypeKind::F32) },
            ParamInfo { name: "y_ptr", kind: ParamKind::Ptr(DTypeKind::F32) },
            ParamInfo { name: "out_ptr", kind: ParamKind::Ptr(DTypeKind::F32) },
            ParamInfo { name: "n", kind: ParamKind::Scalar(DTypeKind::I32) },
        ],
        configs: &[],
        key: &["n"],
        instances: &[],
        module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
    };

    const LOAD_X: Site = Site { kernel: "add_kernel", line: 10, column: 9 };
    const LOAD_Y: Site = Site { kernel: "add_kernel", line: 11, column: 9 };
    const STORE: Site = Site { kernel: "add_kernel", line: 13, column: 5 };

    /// A hand-written "generated" CPU body for Triton's vector-add tutorial.
    /// `masked: false` forgets the mask, so the last block runs out of bounds.
    fn add_body(n: i32, block: i32, masked: bool) -> impl Fn(&Ctx<'_>) -> Result<(), KernelError> + Sync {
        move |ctx| {
            let pid = ctx.program_id(0);
            let offs = map2(&Blk::scalar(pid * block), &arange(0, block), Num::add);
            let mask = map1(&offs, |o| o < n);
            let mask = masked.then_some(&mask);
            let at = |buf: u32| map2(&Blk::scalar(P::arg(buf)), &offs, ptr_add);
            let x = load::<f32>(ctx, &at(0), mask, None, &LOAD_X)?;
            let y = load::<f32>(ctx, &at(1), mask, None, &LOAD_Y)?;
            store(ctx, &at(2), &map2(&x, &y, Num::add), mask, &STORE)
        }
    }

    fn tensors(n: usize) -> [Tensor<f32>; 3] {
        let dev = Device::cpu();
        let x = Tensor::from_vec(&dev, &[n], (0..n).map(|i| i as f32).collect()).unwrap();
        let y = Tensor::full(&dev, &[n], 0.5f32).unwrap();
        let out = Tensor::zeros(&dev, &[n]).unwrap();
        [x, y, out]
    }

    #[test]
    fn vector_add_over_a_grid() {
        let n = 1000;
        let [x, y, out] = tensors(n);
        let args = [ptr_arg("x_ptr", &x), ptr_arg("y_ptr", &y), ptr_arg("out_ptr", &out)];
        let grid = [crate::cdiv(n as u32, 128), 1, 1];
        launch_cpu(&ADD, &args, grid, &add_body(n as i32, 128, true)).unwrap();
        let expected: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
        assert_eq!(out.to_vec(), expected);
    }

    #[test]
    fn first_error_is_returned_and_names_the_site() {
        let n = 1000;
        let [x, y, out] = tensors(n);
        let args = [ptr_arg("x_ptr", &x), ptr_arg("y_ptr", &y), ptr_arg("out_ptr", &out)];
        let err = launch_cpu(&ADD, &args, [8, 1, 1], &add_body(n as i32, 128, false)).unwrap_err();
        // Only the last block (pid 7, offsets 896..1024) is out of bounds.
        assert_eq!(
            err,
            LaunchError::Kernel(KernelError::OutOfBounds {
                kernel: "add_kernel",
                line: 10,
                column: 9,
                op: "load",
                arg: "x_ptr",
                index: 1000,
                len: 1000,
            })
        );
    }

    #[test]
    fn smallest_failing_program_wins_and_others_stop() {
        let info = KernelInfo { name: "fail", params: &[], configs: &[], key: &[], instances: &[], module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[] };
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let err = launch_cpu(&info, &[], [64, 4, 2], &|ctx| {
            ran.fetch_add(1, Ordering::Relaxed);
            let site = Site { kernel: "fail", line: ctx.program_id(1) as u32, column: ctx.program_id(2) as u32 };
            Num::div(1i32, 0).map(drop).map_err(|e| e.at(&site))
        })
        .unwrap_err();
        let LaunchError::Kernel(KernelError::DivisionByZero { .. }) = err else {
            panic!("unexpected error {err:?}");
        };
        assert!(ran.load(Ordering::Relaxed) < 64 * 4 * 2, "the stop flag should skip instances");
    }

    #[test]
    fn program_ids_cover_a_3d_grid_once() {
        let info = KernelInfo {
            name: "ids",
            params: &[ParamInfo { name: "out", kind: ParamKind::Ptr(DTypeKind::I32) }],
            configs: &[],
            key: &[],
            instances: &[],
            module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
        };
        let out = Tensor::<i32>::zeros(&Device::cpu(), &[3 * 4 * 5]).unwrap();
        let site = Site { kernel: "ids", line: 1, column: 1 };
        launch_cpu(&info, &[ptr_arg("out", &out)], [3, 4, 5], &|ctx| {
            let [x, y, z] = [0, 1, 2].map(|a| ctx.program_id(a));
            assert_eq!([0, 1, 2].map(|a| ctx.num_programs(a)), [3, 4, 5]);
            let lin = i64::from(x + 3 * (y + 4 * z));
            let old = load::<i32>(ctx, &Blk::scalar(P { buf: 0, off: lin }), None, None, &site)?;
            store(ctx, &Blk::scalar(P { buf: 0, off: lin }), &map1(&old, |v| v + 1), None, &site)
        })
        .unwrap();
        assert_eq!(out.to_vec(), vec![1; 60]);
        // A zero-sized grid runs nothing.
        launch_cpu(&info, &[ptr_arg("out", &out)], [0, 4, 5], &|_| unreachable!()).unwrap();
    }

    #[test]
    fn panics_become_internal_errors() {
        let info = KernelInfo { name: "bad", params: &[], configs: &[], key: &[], instances: &[], module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[] };
        let err = launch_cpu(&info, &[], [2, 1, 1], &|_| {
            let _ = crate::cpu::trans(&arange(0, 3));
            Ok(())
        })
        .unwrap_err();
        assert_eq!(
            err,
            LaunchError::Kernel(KernelError::Internal {
                kernel: "bad",
                message: "trans: expected a 2-D block, found shape [3]".to_string()
            })
        );
        assert!(err.to_string().contains("this is a bug"));
    }

    #[test]
    fn debug_does_not_dump_storage() {
        let t = Tensor::<f32>::zeros(&Device::cpu(), &[1000]).unwrap();
        let args = [ptr_arg("x", &t)];
        assert_eq!(
            format!("{:?}", args[0]),
            "PtrArg { name: \"x\", dtype: F32, device: cpu, offset: 0, storage_len: 1000 }"
        );
        let ctx = Ctx::new("k", [0; 3], [1; 3], &args);
        assert!(format!("{ctx:?}").len() < 300);
    }

    #[test]
    fn arguments_are_checked_before_running() {
        let [x, y, out] = tensors(4);
        let never = |_: &Ctx<'_>| -> Result<(), KernelError> { unreachable!() };
        let err = launch_cpu(&ADD, &[ptr_arg("x_ptr", &x), ptr_arg("y_ptr", &y)], [1, 1, 1], &never).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument `add_kernel`: expected 3 pointer arguments (x_ptr, y_ptr, out_ptr), found 2 pointer arguments"
        );
        let wrong = Tensor::<i32>::zeros(&Device::cpu(), &[4]).unwrap();
        let err = launch_cpu(
            &ADD,
            &[ptr_arg("x_ptr", &x), ptr_arg("y_ptr", &wrong), ptr_arg("out_ptr", &out)],
            [1, 1, 1],
            &never,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "invalid argument `y_ptr`: expected a tensor of f32, found a tensor of i32");
        let err = launch_cpu(
            &ADD,
            &[ptr_arg("x_ptr", &x), ptr_arg("out_ptr", &out), ptr_arg("y_ptr", &y)],
            [1, 1, 1],
            &never,
        )
        .unwrap_err();
        assert!(matches!(err, LaunchError::InvalidArgument { arg: "y_ptr", .. }));
        let args = [ptr_arg("x_ptr", &x), ptr_arg("y_ptr", &y), ptr_arg("out_ptr", &out)];
        let err = launch_cpu(&ADD, &args, [1, 65536, 1], &never).unwrap_err();
        assert!(matches!(err, LaunchError::InvalidGrid { .. }));
    }

    #[test]
    fn all_arguments_must_share_the_first_ones_device() {
        // Fake devices: the check sees only kind and ordinal, so CUDA cases run without a GPU.
        let ok = [("x_ptr", DeviceKey::Cuda(0)), ("y_ptr", DeviceKey::Cuda(0))];
        assert!(check_devices(&ok, None).is_ok());
        let mixed = [("x_ptr", DeviceKey::Cuda(0)), ("y_ptr", DeviceKey::Cuda(0)), ("out_ptr", DeviceKey::Cpu)];
        let err = check_devices(&mixed, None).unwrap_err();
        assert_eq!(
            err,
            LaunchError::DeviceMismatch {
                arg: "out_ptr",
                expected: "cuda:0 (the device of `x_ptr`)".into(),
                found: "cpu".into()
            }
        );
        assert_eq!(
            err.to_string(),
            "argument `out_ptr` is on device cpu, but the kernel launches on cuda:0 (the device of `x_ptr`)"
        );
        let two_gpus = [("a", DeviceKey::Cuda(1)), ("b", DeviceKey::Cuda(0))];
        assert!(matches!(check_devices(&two_gpus, None), Err(LaunchError::DeviceMismatch { arg: "b", .. })));
        // `launch_cpu` insists on the CPU.
        let err = check_devices(&[("x", DeviceKey::Cuda(2))], Some(DeviceKey::Cpu)).unwrap_err();
        assert_eq!(err.to_string(), "argument `x` is on device cuda:2, but the kernel launches on cpu");
        assert!(check_devices(&[], None).is_ok());
    }

    #[test]
    fn scalars_are_checked_against_the_parameters() {
        assert!(check_scalars(&ADD, &[ScalarArg::I32(3)]).is_ok());
        let err = check_scalars(&ADD, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument `add_kernel`: expected 1 scalar arguments (n), found 0 scalar arguments"
        );
        let err = check_scalars(&ADD, &[ScalarArg::F32(3.0)]).unwrap_err();
        assert_eq!(err.to_string(), "invalid argument `n`: expected a scalar of i32, found a scalar of f32");
    }

    #[test]
    fn launch_dispatches_cpu_tensors_to_the_cpu_backend() {
        static INFO: KernelInfo = KernelInfo { name: "add_kernel", ..ADD };
        let n = 300;
        let [x, y, out] = tensors(n);
        let args = [ptr_arg("x_ptr", &x), ptr_arg("y_ptr", &y), ptr_arg("out_ptr", &out)];
        launch(&INFO, 0, &args, [3, 1, 1], &[ScalarArg::I32(n as i32)], &add_body(n as i32, 128, true)).unwrap();
        assert_eq!(out.to_vec()[299], 299.5);
        let err = launch(&INFO, 0, &args, [3, 1, 1], &[], &add_body(n as i32, 128, true)).unwrap_err();
        assert!(matches!(err, LaunchError::InvalidArgument { arg: "add_kernel", .. }));
    }
}
