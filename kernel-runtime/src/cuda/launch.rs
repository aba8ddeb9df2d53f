//! Launching a compiled instance on a CUDA device.

use std::ffi::c_void;

use cudarc::driver::result;

use super::{ptx, CudaDevice};
use crate::error::{DeviceError, LaunchError};
use crate::abi::{Hidden, InstanceInfo, KernelInfo, ParamKind};
use crate::launch::{ArgMem, PtrArg, ScalarArg};

/// Whether [`Settings::sync`](crate::Settings::sync) (`KERNEL_SYNC=1`): synchronize after
/// every launch so that a failing kernel is reported by its own launch.
fn sync_after_launch() -> bool {
    crate::Settings::current().sync
}

/// The bytes of a scalar argument as the kernel receives it (little-endian,
/// in the low bytes of a 64-bit slot; the driver copies the parameter's size).
fn scalar_slot(s: ScalarArg) -> u64 {
    match s {
        ScalarArg::I32(v) => u64::from(v as u32),
        ScalarArg::U32(v) => u64::from(v),
        ScalarArg::I64(v) => v as u64,
        ScalarArg::I8(v) => u64::from(v as u8),
        ScalarArg::I16(v) => u64::from(v as u16),
        ScalarArg::U8(v) => u64::from(v),
        ScalarArg::U16(v) => u64::from(v),
        ScalarArg::F32(v) => u64::from(v.to_bits()),
        ScalarArg::F64(v) => v.to_bits(),
        ScalarArg::Bool(v) => u64::from(v),
    }
}

/// What a launch passes in its entry's hidden parameters: the pointer arguments (for their
/// lengths), the fault record's address and the launch tag, the tensor maps' address and mask
/// (when the entry takes them) and a split launch's four values.
pub(crate) struct HiddenValues<'a, 'b> {
    pub(crate) args: &'a [PtrArg<'b>],
    pub(crate) record: u64,
    pub(crate) tag: u32,
    pub(crate) maps: [u64; 2],
    pub(crate) split: [u64; 4],
}

/// The values of the hidden parameters that follow the declared ones, in the order the entry
/// lists them (`hidden`, from its [`InstanceInfo`]): for `Len(i)`, the elements addressable
/// from pointer parameter `i`'s argument (its allocation's length minus its offset), then the
/// fault record and tag (see `DeviceError::OutOfBounds`), the tensor maps, the split values.
pub(crate) fn hidden_slots(info: &KernelInfo, hidden: &[Hidden], v: &HiddenValues<'_, '_>) -> Result<Vec<u64>, LaunchError> {
    hidden
        .iter()
        .map(|h| match *h {
            Hidden::Len(i) => {
                // The argument of pointer parameter `i` is the one after the pointers before it.
                let ptrs_before = |_| info.params[..i].iter().filter(|p| p.kind.is_ptr()).count();
                let arg = info.params.get(i).filter(|p| p.kind.is_ptr()).map(ptrs_before).and_then(|n| v.args.get(n));
                let arg = arg.ok_or_else(|| LaunchError::InvalidArgument {
                    arg: info.name,
                    expected: format!("a pointer parameter #{i} for a hidden length"),
                    found: "none (the instance's hidden parameters do not match its kernel: a bug in the generated launcher)".into(),
                })?;
                Ok(match arg.mem {
                    ArgMem::Cuda { len, .. } => len.saturating_sub(arg.offset) as u64,
                    ArgMem::Host(_) => 0,
                })
            }
            Hidden::Fault => Ok(v.record),
            Hidden::Tag => Ok(u64::from(v.tag)),
            Hidden::TensorMaps => Ok(v.maps[0]),
            Hidden::TensorMapMask => Ok(v.maps[1]),
            Hidden::SplitWorkspace => Ok(v.split[0]),
            Hidden::SplitCounters => Ok(v.split[1]),
            Hidden::SplitWholePrograms => Ok(v.split[2]),
            Hidden::SplitParts => Ok(v.split[3]),
        })
        .collect()
}

/// The kernel parameter values in declaration order: pointer parameters take
/// the next pointer argument's address plus its storage offset in bytes,
/// scalar parameters the next scalar argument.
///
/// The arguments were checked against `info` before (count, order, dtypes).
pub(crate) fn param_slots(
    info: &KernelInfo,
    args: &[PtrArg<'_>],
    scalars: &[ScalarArg],
) -> Result<Vec<u64>, LaunchError> {
    let (mut ptrs, mut vals) = (args.iter(), scalars.iter());
    let internal = |what: &str| LaunchError::InvalidArgument {
        arg: info.name,
        expected: format!("arguments matching the kernel's parameters ({what})"),
        found: "fewer arguments (this is a bug in the generated launcher)".into(),
    };
    info.params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Ptr(_) => {
                let a = ptrs.next().ok_or_else(|| internal("pointers"))?;
                match a.mem {
                    ArgMem::Cuda { ptr, .. } => Ok(ptr + (a.offset * a.kind.size_bytes()) as u64),
                    ArgMem::Host(_) => Err(LaunchError::DeviceMismatch {
                        arg: a.name,
                        expected: "a CUDA device".into(),
                        found: a.device.to_string(),
                    }),
                }
            }
            ParamKind::Scalar(_) => vals.next().map(|&s| scalar_slot(s)).ok_or_else(|| internal("scalars")),
        })
        .collect()
}

/// Checks the grid and block of a launch against the device's limits.
pub(crate) fn check_limits(
    info: &KernelInfo,
    inst: &InstanceInfo,
    grid: [u32; 3],
    max_grid: [u32; 3],
    max_threads: u32,
    device: &str,
) -> Result<(), LaunchError> {
    for ((axis, g), max) in ["x", "y", "z"].iter().zip(grid).zip(max_grid) {
        if g > max {
            return Err(LaunchError::InvalidGrid {
                reason: format!("grid {grid:?} has {g} programs along {axis}, but {device} allows at most {max}"),
            });
        }
    }
    if inst.threads == 0 || inst.threads > max_threads {
        return Err(LaunchError::BlockSize {
            kernel: info.name,
            entry: inst.entry,
            threads: inst.threads,
            max: max_threads,
            reason: format!("the limit of {device}"),
        });
    }
    Ok(())
}

/// Launches instance `index` of `info` on `dev` over `grid` (arguments already
/// checked by the caller: count, names, dtypes, all on `dev`).
pub(crate) fn launch_cuda(
    dev: &CudaDevice,
    info: &'static KernelInfo,
    index: usize,
    args: &[PtrArg<'_>],
    grid: [u32; 3],
    scalars: &[ScalarArg],
) -> Result<(), LaunchError> {
    let Some(inst) = info.instances.get(index) else {
        return Err(LaunchError::NoInstance {
            kernel: info.name,
            reason: format!(
                "instance #{index} does not exist ({} compiled instance{})",
                info.instances.len(),
                if info.instances.len() == 1 { "" } else { "s" }
            ),
        });
    };
    check_limits(info, inst, grid, dev.max_grid, dev.max_threads_per_block, &dev.label)?;
    ptx::check_shared(info, inst, u64::from(inst.shared_bytes), u64::from(dev.max_shared_optin))?;
    let mut slots = param_slots(info, args, scalars)?;
    if grid.contains(&0) {
        return Ok(());
    }
    let f = ptx::function(dev, info, index, inst, false)?;
    if inst.threads > f.max_threads {
        return Err(LaunchError::BlockSize {
            kernel: info.name,
            entry: inst.entry,
            threads: inst.threads,
            max: f.max_threads,
            reason: "the registers the compiled entry uses per thread".into(),
        });
    }
    // No other launch may use the per-device workspaces until this one is queued and joined.
    let launching = dev.launching.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (record, tag) = dev.fault_args(info, index).map_err(LaunchError::Device)?;
    // The last wave's programs may run on several blocks each (`crate::split`): the instance's
    // split entry then runs, over more blocks, with its own hidden parameters.
    let split = super::split::split_launch(dev, info, index, inst, grid);
    let hidden = if split.is_some() { inst.split_hidden } else { inst.hidden };
    let maps = if hidden.contains(&Hidden::TensorMaps) {
        super::tma::tma_slots(dev, info, inst.tma, args, scalars).map_err(LaunchError::Device)?
    } else {
        [0, 0]
    };
    let (mut grid, mut function) = (grid, f.function);
    if let Some(s) = &split {
        grid[0] = s.blocks;
        function = s.function.function;
    }
    let values = HiddenValues { args, record, tag, maps, split: split.as_ref().map_or([0; 4], |s| s.slots) };
    slots.extend(hidden_slots(info, hidden, &values)?);
    let mut params: Vec<*mut c_void> = slots.iter_mut().map(|s| std::ptr::from_mut(s).cast::<c_void>()).collect();
    // The stream of `crate::with_stream`, after it waits for everything queued on the device's
    // (the tensor maps and split counters above included), or the device's own.
    let stream = crate::stream::launch_stream(dev)?;
    let cuda_error = |op: &str, e: DeviceError| match e {
        DeviceError::Driver { code, message, .. } => {
            LaunchError::Cuda { kernel: info.name, entry: inst.entry, op: op.to_string(), code, message }
        }
        other => LaunchError::Device(other),
    };
    let launched = dev.call("cuLaunchKernel", || {
        // SAFETY: `function` is a loaded entry whose parameters are, in order,
        // `info.params` (pointers are 64-bit addresses inside live device
        // allocations, scalars at most 8 bytes); `slots` outlives the call,
        // which copies the parameter values.
        unsafe {
            result::launch_kernel(
                function,
                (grid[0], grid[1], grid[2]),
                (inst.threads, 1, 1),
                inst.shared_bytes,
                stream,
                &mut params,
            )
        }
    });
    launched.map_err(|e| cuda_error("cuLaunchKernel", e))?;
    crate::stream::after_launch(dev, stream)?;
    drop(launching);
    if sync_after_launch() {
        dev.synchronize().map_err(|e| cuda_error("running the kernel (KERNEL_SYNC=1)", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DTypeKind;
    use crate::abi::{ModuleInfo, ParamInfo};

    static INST: InstanceInfo =
        InstanceInfo { entry: "k__c0", config: 0, variant: 0, launch_metas: &[], threads: 256, shared_bytes: 0, tma: &[], split_bytes: 0, hidden: &[], split_hidden: &[] };
    static INFO: KernelInfo = KernelInfo {
        name: "k",
        params: &[
            ParamInfo { name: "x", kind: ParamKind::Ptr(DTypeKind::F32) },
            ParamInfo { name: "n", kind: ParamKind::Scalar(DTypeKind::I32) },
            ParamInfo { name: "y", kind: ParamKind::Ptr(DTypeKind::F16) },
            ParamInfo { name: "a", kind: ParamKind::Scalar(DTypeKind::F32) },
        ],
        configs: &[],
        key: &[],
        instances: std::slice::from_ref(&INST),
        module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
    };

    #[test]
    fn params_in_declaration_order_with_byte_offsets() {
        let dev = crate::Device::cpu();
        let x = PtrArg { name: "x", kind: DTypeKind::F32, device: &dev, mem: ArgMem::Cuda { ptr: 0x1000, len: 64 }, offset: 3 };
        let y = PtrArg { name: "y", kind: DTypeKind::F16, device: &dev, mem: ArgMem::Cuda { ptr: 0x9000, len: 64 }, offset: 5 };
        let slots = param_slots(&INFO, &[x, y], &[ScalarArg::I32(-1), ScalarArg::F32(1.5)]).unwrap();
        assert_eq!(slots, [0x1000 + 12, 0xffff_ffff, 0x9000 + 10, u64::from(1.5f32.to_bits())]);
        assert_eq!(scalar_slot(ScalarArg::Bool(true)), 1);
        assert_eq!(scalar_slot(ScalarArg::I64(-1)), u64::MAX);
    }

    #[test]
    fn specialization_marks_aligned_pointers_and_unit_or_divisible_integers() {
        let dev = crate::Device::cpu();
        // 0x1000 + 3 f32: 12 bytes off a 16-byte boundary; 0x9000 + 8 f16: on one.
        let x = PtrArg { name: "x", kind: DTypeKind::F32, device: &dev, mem: ArgMem::Cuda { ptr: 0x1000, len: 64 }, offset: 3 };
        let y = PtrArg { name: "y", kind: DTypeKind::F16, device: &dev, mem: ArgMem::Cuda { ptr: 0x9000, len: 64 }, offset: 8 };
        assert_eq!(crate::launch::specialization(&[x, y], &[4096, 1, 4097]), "-a|d1-");
        // A transposed operand swaps which stride is 1: a different key.
        assert_ne!(crate::launch::specialization(&[y], &[4096, 1]), crate::launch::specialization(&[y], &[1, 4096]));
    }

    #[test]
    fn hidden_params_in_the_order_the_entry_lists_them() {
        let dev = crate::Device::cpu();
        let x = PtrArg { name: "x", kind: DTypeKind::F32, device: &dev, mem: ArgMem::Cuda { ptr: 0x1000, len: 64 }, offset: 3 };
        let y = PtrArg { name: "y", kind: DTypeKind::F16, device: &dev, mem: ArgMem::Cuda { ptr: 0x9000, len: 64 }, offset: 5 };
        let v = HiddenValues { args: &[x, y], record: 0xdead, tag: 7, maps: [0x7000, 0b11], split: [0x100, 0x200, 3, 4] };
        // Elements addressable from each pointer (parameters 0 and 2 are the pointers), the
        // record, the tag.
        let plain = [Hidden::Len(0), Hidden::Len(2), Hidden::Fault, Hidden::Tag];
        assert_eq!(hidden_slots(&INFO, &plain, &v).unwrap(), [61, 59, 0xdead, 7]);
        // Tensor maps and a split launch's values follow, as listed.
        let all = [Hidden::Len(2), Hidden::Len(0), Hidden::Fault, Hidden::Tag, Hidden::TensorMaps, Hidden::TensorMapMask]
            .into_iter()
            .chain([Hidden::SplitWorkspace, Hidden::SplitCounters, Hidden::SplitWholePrograms, Hidden::SplitParts]);
        let all: Vec<Hidden> = all.collect();
        assert_eq!(hidden_slots(&INFO, &all, &v).unwrap(), [59, 61, 0xdead, 7, 0x7000, 3, 0x100, 0x200, 3, 4]);
        // A length of a parameter that is no pointer is a typed error, not a wrong argument.
        for bad in [Hidden::Len(1), Hidden::Len(9)] {
            let e = hidden_slots(&INFO, &[bad], &v).unwrap_err();
            assert!(matches!(e, LaunchError::InvalidArgument { .. }), "{e}");
            assert!(e.to_string().contains("the instance's hidden parameters do not match its kernel"), "{e}");
        }
    }

    #[test]
    fn grid_and_block_limits() {
        let max = [i32::MAX as u32, 65535, 65535];
        assert!(check_limits(&INFO, &INST, [10, 65535, 1], max, 1024, "cuda:0").is_ok());
        let e = check_limits(&INFO, &INST, [1, 65536, 1], max, 1024, "cuda:0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid launch grid: grid [1, 65536, 1] has 65536 programs along y, but cuda:0 allows at most 65535"
        );
        let e = check_limits(&INFO, &INST, [1, 1, 1], max, 128, "cuda:0").unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel `k` (entry `k__c0`) runs 256 threads per block, but at most 128 can run \
             (the limit of cuda:0): use fewer warps"
        );
    }
}
