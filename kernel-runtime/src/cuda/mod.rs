//! The CUDA backend: opening devices (context and stream), device memory,
//! PTX modules and launches, over cudarc's driver API.
//!
//! cudarc loads `libcuda.so` at run time, so this module builds and links on
//! machines without CUDA. Its loader panics when the library or one of its
//! symbols is missing: every call goes through [`guarded`], which checks
//! [`driver`] first and turns both driver errors and panics into
//! [`DeviceError`]s.
//!
//! One context (the device's primary context) and one non-blocking stream per
//! device, opened once per process and shared by every [`Device`](crate::Device)
//! value of that ordinal. All work of a device (copies, launches, frees) is
//! ordered on its stream, so cudarc's per-allocation event tracking is switched
//! off.

pub(crate) mod carveout;
pub(crate) mod launch;
pub(crate) mod memory;
pub(crate) mod ptx;
pub(crate) mod split;
pub(crate) mod tma;

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaStream, DriverError};

use crate::cpu::AssertionFailure;
use crate::error::DeviceError;

/// An opened CUDA device: its context, its stream and the properties the
/// runtime checks launches against.
pub(crate) struct CudaDevice {
    /// The CUDA ordinal.
    pub(crate) ordinal: usize,
    /// `cuda:N`, for messages.
    pub(crate) label: String,
    /// The marketing name (`NVIDIA H100 80GB HBM3`).
    pub(crate) name: String,
    /// Compute capability (major, minor).
    pub(crate) cc: (u32, u32),
    /// Number of streaming multiprocessors.
    pub(crate) sm_count: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub(crate) max_threads_per_block: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_{X,Y,Z}`.
    pub(crate) max_grid: [u32; 3],
    /// `CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`.
    pub(crate) max_shared_optin: u32,
    /// What one multiprocessor holds (for each kernel's shared-memory carveout).
    pub(crate) sm_limits: carveout::SmLimits,
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Loaded PTX modules, by path.
    pub(crate) modules: Mutex<HashMap<PathBuf, Arc<ptx::LoadedModule>>>,
    /// Resolved entry points, by (address of the kernel's `KernelInfo`, instance, whether it is
    /// the instance's entry for split launches).
    pub(crate) functions: Mutex<HashMap<(usize, usize, bool), Arc<ptx::LoadedFunction>>>,
    /// Instances whose split entry the loaded PTX lacks (built for another architecture than
    /// sm_90a, or before split entries existed): their launches are not split.
    pub(crate) no_split: Mutex<std::collections::HashSet<(usize, usize)>>,
    /// The fault record every launch receives (8 words, see `kernel_std`'s `record_fault`),
    /// allocated on the first launch, and the instances launched so far (a launch's tag is its
    /// instance's index here).
    pub(crate) faults: Mutex<FaultState>,
    /// Where launches pass their tensor maps (`tma.rs`).
    pub(crate) tma: Mutex<tma::TmaArena>,
    /// The workspace of split launches (`split.rs`).
    pub(crate) split: Mutex<split::SplitArena>,
    /// Held while a launch is queued: a launch on an external stream (`crate::stream`) is
    /// joined with the device's stream before and after, and no other launch may use the
    /// per-device workspaces (tensor maps, split partials) in between.
    pub(crate) launching: Mutex<()>,
}

/// Where kernels of a device record an out-of-bounds access.
#[derive(Default)]
pub(crate) struct FaultState {
    record: Option<u64>,
    tags: Vec<(&'static crate::abi::KernelInfo, usize)>,
}

/// Words of the fault record: set flag, tag, parameter, line, index (2), then for an
/// out-of-bounds access the length (2), for an assertion (parameter [`ASSERT_PARAM`]) the
/// column, the operand word, the program id (3) and two values (2 each); see `kernel_std`'s
/// `record_fault` and `report_assert`.
const FAULT_WORDS: usize = 16;

/// The parameter word of a recorded `device_assert` (`kernel_std::device::ASSERT_PARAM`).
const ASSERT_PARAM: u32 = u32::MAX - 1;

/// The failed `device_assert` of a fault record `w` of a kernel of `info` (see [`FAULT_WORDS`]):
/// the record gives the position, element, program and operand values, `info`'s table the
/// condition, message and operand texts.
fn assertion_failure(info: Option<&'static crate::abi::KernelInfo>, w: &[u32; FAULT_WORDS]) -> AssertionFailure {
    let (line, column) = (w[3], w[6]);
    let site = info.and_then(|i| i.assert_at(line, column));
    let count = (w[7] & 0xff) as usize;
    let operands = (0..count.min(2))
        .map(|i| {
            let bits = u64::from(w[11 + 2 * i]) | (u64::from(w[12 + 2 * i]) << 32);
            let text = site.and_then(|s| s.operands.get(i)).copied().unwrap_or("?");
            (text.to_string(), assert_value_text((w[7] >> (8 + 8 * i)) & 0xff, bits))
        })
        .collect();
    AssertionFailure {
        kernel: info.map_or("?", |i| i.name),
        line,
        column,
        condition: site.map_or("?", |s| s.condition).to_string(),
        message: site.map_or("", |s| s.message).to_string(),
        program: [w[8], w[9], w[10]],
        index: (w[7] & (1 << 31) == 0).then(|| (u64::from(w[4]) | (u64::from(w[5]) << 32)) as usize),
        operands,
    }
}

/// A value recorded by `device_assert` as text, the way the CPU backend prints it: `code` is
/// the dtype's code in the table of `kernel-macros`' `dtype_code` (f16, bf16, f32, f64, i32,
/// u32, i64, bool, i8, i16, u8, u16, f8e4m3, f8e5m2).
fn assert_value_text(code: u32, bits: u64) -> String {
    match code {
        0 => half::f16::from_bits(bits as u16).to_string(),
        1 => half::bf16::from_bits(bits as u16).to_string(),
        2 => f32::from_bits(bits as u32).to_string(),
        3 => f64::from_bits(bits).to_string(),
        4 => (bits as u32 as i32).to_string(),
        5 => (bits as u32).to_string(),
        6 => (bits as i64).to_string(),
        8 => (bits as u8 as i8).to_string(),
        9 => (bits as u16 as i16).to_string(),
        10 => (bits as u8).to_string(),
        11 => (bits as u16).to_string(),
        12 => crate::f8e4m3::from_bits(bits as u8).to_string(),
        13 => crate::f8e5m2::from_bits(bits as u8).to_string(),
        _ => (bits != 0).to_string(),
    }
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaDevice")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("cc", &self.cc)
            .finish_non_exhaustive()
    }
}

/// The CUDA error name and description of `e` (`CUDA_ERROR_OUT_OF_MEMORY`, `out of memory`).
pub(crate) fn error_parts(e: DriverError) -> (String, String) {
    let code = format!("{:?}", e.0);
    let message = catch_unwind(|| e.error_string().ok().map(|s| s.to_string_lossy().into_owned()))
        .ok()
        .flatten()
        .unwrap_or_else(|| "no description from the driver".to_string());
    (code, message)
}

/// The text of a panic payload.
pub(crate) fn panic_text(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<String>(), payload.downcast_ref::<&str>()) {
        (Some(s), _) => s.clone(),
        (None, Some(s)) => (*s).to_string(),
        (None, None) => "a panic with a non-string payload".to_string(),
    }
}

/// Runs a driver call on `device` (a label such as `cuda:0`), turning its
/// error or panic into a [`DeviceError`].
pub(crate) fn guarded<R>(
    device: &str,
    op: impl fmt::Display,
    f: impl FnOnce() -> Result<R, DriverError>,
) -> Result<R, DeviceError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            let (code, message) = error_parts(e);
            Err(DeviceError::Driver { device: device.to_string(), op: op.to_string(), code, message })
        }
        Err(payload) => Err(DeviceError::DriverPanic { op: op.to_string(), message: panic_text(&*payload) }),
    }
}

/// Loads the driver library and initializes it, once per process.
///
/// # Errors
/// [`DeviceError::NoDriver`] when `libcuda.so` cannot be loaded; the error of
/// `cuInit` otherwise.
pub(crate) fn driver() -> Result<(), DeviceError> {
    static DRIVER: OnceLock<Result<(), DeviceError>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            if loadable(DRIVER_NAMES).is_none() {
                return Err(DeviceError::NoDriver { reason: no_driver_reason() });
            }
            guarded("cuda", "cuInit", result::init)
        })
        .clone()
}

/// The names the driver library is looked for by.
const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// The first of `names` (library names for the dynamic loader) that loads; the library stays
/// loaded, so that cudarc's own `dlopen` of it (when cudarc loads the CUDA libraries at run
/// time, its default) or the executable's link to it (when a crate such as candle makes
/// cudarc link them) finds it. This crate asks cudarc only for `fallback-dynamic-loading`, so
/// it builds with either choice and checks for the libraries itself.
pub(crate) fn loadable(names: &[&'static str]) -> Option<&'static str> {
    names.iter().copied().find(|name| {
        // SAFETY: loading a CUDA library runs its initializers, which have no preconditions;
        // the handle is leaked so the library stays loaded.
        unsafe { libloading::Library::new(*name) }.map(std::mem::forget).is_ok()
    })
}

/// What [`DeviceError::NoDriver`] says after its fixed prefix.
fn no_driver_reason() -> String {
    format!(
        "the dynamic loader could not open any of {} library names ({}); \
         install the NVIDIA driver or add its directory to LD_LIBRARY_PATH, \
         or run kernels on the CPU with `Device::cpu()`",
        DRIVER_NAMES.len(),
        DRIVER_NAMES.join(", ")
    )
}

/// Two timing events (start, end) in `dev`'s context.
pub(crate) fn timing_events(dev: &CudaDevice) -> Result<(CudaEvent, CudaEvent), DeviceError> {
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    let start = dev.call("cuEventCreate", || dev.ctx.new_event(flags))?;
    let end = dev.call("cuEventCreate", || dev.ctx.new_event(flags))?;
    Ok((start, end))
}

/// The number of CUDA devices (0 when there is no driver).
pub(crate) fn device_count() -> Result<usize, DeviceError> {
    match driver() {
        Ok(()) => {}
        Err(DeviceError::NoDriver { .. }) => return Ok(0),
        Err(e) => return Err(e),
    }
    let n = guarded("cuda", "cuDeviceGetCount", result::device::get_count)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// The opened device `ordinal`, opening it on first use.
pub(crate) fn open(ordinal: usize) -> Result<Arc<CudaDevice>, DeviceError> {
    static DEVICES: Mutex<Vec<Option<Arc<CudaDevice>>>> = Mutex::new(Vec::new());
    driver()?;
    let mut devices = DEVICES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(Some(d)) = devices.get(ordinal) {
        return Ok(Arc::clone(d));
    }
    let count = usize::try_from(guarded("cuda", "cuDeviceGetCount", result::device::get_count)?).unwrap_or(0);
    if ordinal >= count {
        return Err(DeviceError::NoSuchDevice { ordinal, count });
    }
    let dev = Arc::new(CudaDevice::open(ordinal)?);
    if devices.len() <= ordinal {
        devices.resize(ordinal + 1, None);
    }
    devices[ordinal] = Some(Arc::clone(&dev));
    Ok(dev)
}

impl CudaDevice {
    /// Retains the primary context of `ordinal`, creates the stream and reads the limits.
    fn open(ordinal: usize) -> Result<Self, DeviceError> {
        let label = format!("cuda:{ordinal}");
        let ctx = guarded(&label, "creating the context (cuDevicePrimaryCtxRetain)", || CudaContext::new(ordinal))?;
        // SAFETY: every use of this context's memory is ordered on the one
        // stream created below, so no cross-stream events are needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = guarded(&label, "cuStreamCreate", || ctx.new_stream())?;
        let attr = |a: Attr| -> Result<u32, DeviceError> {
            let v = guarded(&label, format!("cuDeviceGetAttribute({a:?})"), || ctx.attribute(a))?;
            Ok(u32::try_from(v).unwrap_or(0))
        };
        let name = guarded(&label, "cuDeviceGetName", || ctx.name())?;
        let major = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok(CudaDevice {
            ordinal,
            name: name.trim().to_string(),
            cc: (major, minor),
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_grid: [
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            sm_limits: carveout::SmLimits {
                shared: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
                registers: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
                threads: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
                blocks: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
                reserved_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)?,
                cc_major: major,
            },
            label,
            ctx,
            stream,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            no_split: Mutex::new(std::collections::HashSet::new()),
            faults: Mutex::new(FaultState::default()),
            tma: Mutex::new(tma::TmaArena::default()),
            split: Mutex::new(split::SplitArena::default()),
            launching: Mutex::new(()),
        })
    }

    /// Runs a driver call on this device (context bound to the calling thread),
    /// turning its error or panic into a [`DeviceError`].
    pub(crate) fn call<R>(
        &self,
        op: impl fmt::Display,
        f: impl FnOnce() -> Result<R, DriverError>,
    ) -> Result<R, DeviceError> {
        guarded(&self.label, op, || {
            self.ctx.bind_to_thread()?;
            f()
        })
    }

    /// Waits for all work queued on the device's stream, then reports (and clears) an
    /// out-of-bounds access recorded by a kernel since the last synchronization.
    pub(crate) fn synchronize(&self) -> Result<(), DeviceError> {
        self.call("cuStreamSynchronize", || self.stream.synchronize())?;
        self.take_fault()
    }

    /// The fault record's address and the tag of instance `index` of `info`, for a launch.
    pub(crate) fn fault_args(&self, info: &'static crate::abi::KernelInfo, index: usize) -> Result<(u64, u32), DeviceError> {
        let mut st = self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        let record = match st.record {
            Some(r) => r,
            None => {
                let bytes = FAULT_WORDS * 4;
                // SAFETY: a plain allocation, zeroed before any kernel can see it.
                let r = self.call(format!("cuMemAlloc ({bytes} bytes, fault record)"), || unsafe { result::malloc_sync(bytes) })?;
                // SAFETY: `r` is the allocation of `bytes` bytes just made.
                unsafe { self.memset_d8(r, 0, bytes)? };
                st.record = Some(r);
                r
            }
        };
        let key = std::ptr::from_ref(info) as usize;
        let tag = match st.tags.iter().position(|(i, n)| std::ptr::from_ref(*i) as usize == key && *n == index) {
            Some(t) => t,
            None => {
                st.tags.push((info, index));
                st.tags.len() - 1
            }
        };
        Ok((record, u32::try_from(tag).unwrap_or(u32::MAX)))
    }

    /// Reads the fault record after a synchronization; a recorded access becomes
    /// [`DeviceError::OutOfBounds`] and the record is cleared for later launches.
    fn take_fault(&self) -> Result<(), DeviceError> {
        let st = self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(record) = st.record else { return Ok(()) };
        let mut w = [0u32; FAULT_WORDS];
        let stream = self.stream.cu_stream();
        // SAFETY: `record` is a live allocation of FAULT_WORDS words; `w` is not touched until
        // the stream is synchronized.
        self.call("cuMemcpyDtoHAsync (fault record)", || unsafe { result::memcpy_dtoh_async(&mut w, record, stream) })?;
        self.call("cuStreamSynchronize", || self.stream.synchronize())?;
        if w[0] == 0 {
            return Ok(());
        }
        // SAFETY: as above.
        unsafe { self.memset_d8(record, 0, FAULT_WORDS * 4)? };
        self.call("cuStreamSynchronize", || self.stream.synchronize())?;
        if w[2] == ASSERT_PARAM {
            let (info, entry) = match st.tags.get(w[1] as usize) {
                Some((info, n)) => (Some(*info), info.instances.get(*n).map_or("?", |i| i.entry)),
                None => (None, "?"),
            };
            return Err(DeviceError::Assertion { device: self.label.clone(), entry, failure: assertion_failure(info, &w) });
        }
        let (kernel, entry, arg) = match st.tags.get(w[1] as usize) {
            Some((info, n)) => (
                info.name,
                info.instances.get(*n).map_or("?", |i| i.entry),
                // A pointer computed from several parameters reports its address as the index.
                info.params.get(w[2] as usize).map_or("<a pointer computed from several arguments; index = address>", |p| p.name),
            ),
            None => ("?", "?", "?"),
        };
        Err(DeviceError::OutOfBounds {
            device: self.label.clone(),
            kernel,
            entry,
            arg,
            line: w[3],
            index: (u64::from(w[4]) | (u64::from(w[5]) << 32)) as i64,
            len: u64::from(w[6]) | (u64::from(w[7]) << 32),
        })
    }

    /// Sets every byte of `bytes` bytes at device address `ptr` to `value`, queued on the stream.
    ///
    /// # Safety
    /// `[ptr, ptr + bytes)` must lie inside a live allocation of this device.
    pub(crate) unsafe fn memset_d8(&self, ptr: u64, value: u8, bytes: usize) -> Result<(), DeviceError> {
        let stream = self.stream.cu_stream();
        // SAFETY: the caller guarantees the range.
        self.call(format!("cuMemsetD8Async ({bytes} bytes)"), || unsafe { result::memset_d8_async(ptr, value, bytes, stream) })
    }

    /// `CUDA device 0: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "CUDA device {}: {} (sm_{}{}, {} SMs)",
            self.ordinal, self.name, self.cc.0, self.cc.1, self.sm_count
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{AssertInfo, KernelInfo, ModuleInfo};

    static INFO: KernelInfo = KernelInfo {
        name: "k",
        params: &[],
        configs: &[],
        key: &[],
        instances: &[],
        module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] },
        asserts: &[AssertInfo { line: 9, column: 5, condition: "x < n", message: "in range", operands: &["x", "n"] }],
    };

    /// A record as `report_assert` writes it: an f32 and an i32 operand, element 70 of
    /// program (3, 1, 0).
    #[test]
    fn assertion_records_decode_with_the_kernels_table() {
        let mut w = [0u32; FAULT_WORDS];
        w[..8].copy_from_slice(&[1, 0, ASSERT_PARAM, 9, 70, 0, 5, 2 | (2 << 8) | (4 << 16)]);
        w[8..15].copy_from_slice(&[3, 1, 0, 2.5f32.to_bits(), 0, (-4i32) as u32, 0]);
        let f = assertion_failure(Some(&INFO), &w);
        assert_eq!(
            f.to_string(),
            "device_assert failed in kernel `k` at line 9, column 5: in range: `x < n` is false at element 70 of program (3, 1, 0), where x = 2.5, n = -4"
        );
        // A scalar condition has no element; an unknown position keeps what the record holds.
        w[7] = 1 << 31;
        w[6] = 6;
        let f = assertion_failure(Some(&INFO), &w);
        assert_eq!((f.index, f.condition.as_str(), f.operands.len()), (None, "?", 0));
        assert_eq!(assert_value_text(0, 0x3c00), "1");
        assert_eq!(assert_value_text(7, 1), "true");
        assert_eq!(assert_value_text(6, u64::MAX), "-1");
        // The 8-bit floats, as the CPU backend prints them (their value in f32).
        assert_eq!(assert_value_text(12, 0xc4), "-3");
        assert_eq!(assert_value_text(13, 0x3c), "1");
    }
}
