//! Tensor maps for entries that copy operand tiles with Hopper's tensor memory accelerator
//! (see [`TmaOperand`]). Per launch: each operand's 2-D view of its buffer is worked out from
//! the arguments ([`view`]); a valid view is encoded with `cuTensorMapEncodeTiled`; the maps are
//! written, in stream order, to a small per-device buffer in global memory whose address the
//! entry receives together with a mask of the valid maps. A map that cannot be built is not an
//! error: its bit stays clear and the entry copies that operand the other way.

use std::ffi::c_void;
use std::sync::PoisonError;

use cudarc::driver::{result, sys};

use super::CudaDevice;
use crate::dtype::DTypeKind;
use crate::error::DeviceError;
use crate::abi::{KernelInfo, ParamKind, TmaOperand};
use crate::launch::{ArgMem, PtrArg, ScalarArg};

/// Bytes of one encoded map (`CUtensorMap`).
const MAP_BYTES: usize = 128;
/// Maps the per-device buffer holds (the entry's mask has 32 bits).
const MAX_MAPS: usize = 32;

/// Encoded maps a device keeps: launches that repeat their operands' views (a benchmark, a
/// model's layers) reuse them instead of calling the driver.
const ENCODED_MAX: usize = 64;

/// What a map is encoded from.
type MapKey = (TmaOperand, DTypeKind, View);

/// The global-memory buffer a device's launches pass their maps in, what was last written
/// to it (a launch with the same maps copies nothing), and the maps encoded lately.
#[derive(Default)]
pub(crate) struct TmaArena {
    buffer: Option<u64>,
    last: Vec<u8>,
    /// (operand, dtype, view) and its map, or `None` where the driver refused it; most recent
    /// last.
    encoded: Vec<(MapKey, Option<[u8; MAP_BYTES]>)>,
}

impl TmaArena {
    /// The map of `op` over `v`, from the recent ones or encoded now (`None`: refused).
    fn map(&mut self, dev: &CudaDevice, op: &TmaOperand, kind: DTypeKind, v: View) -> Option<[u8; MAP_BYTES]> {
        self.map_with((*op, kind, v), || encode(dev, op, kind, v).ok())
    }

    /// [`TmaArena::map`] with the encoder given.
    fn map_with(&mut self, key: MapKey, encode: impl FnOnce() -> Option<[u8; MAP_BYTES]>) -> Option<[u8; MAP_BYTES]> {
        if let Some(i) = self.encoded.iter().rposition(|(k, _)| *k == key) {
            return self.encoded[i].1;
        }
        let m = encode();
        if self.encoded.len() >= ENCODED_MAX {
            self.encoded.remove(0);
        }
        self.encoded.push((key, m));
        m
    }
}

/// A 2-D view of an operand's buffer for a tensor map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct View {
    /// Address of element (0, 0).
    pub(crate) addr: u64,
    /// Elements per row (the row stride) and rows (whole rows inside the buffer).
    pub(crate) width: u64,
    pub(crate) height: u64,
    /// Bytes per element.
    pub(crate) elem_bytes: u64,
}

/// The value of scalar parameter `index` of `info` among the launch's `scalars`.
fn scalar_value(info: &KernelInfo, scalars: &[ScalarArg], index: usize) -> Option<i64> {
    let k = info.params.get(..index)?.iter().filter(|p| matches!(p.kind, ParamKind::Scalar(_))).count();
    match (info.params.get(index)?.kind, scalars.get(k)?) {
        (ParamKind::Scalar(_), ScalarArg::I32(v)) => Some(i64::from(*v)),
        (ParamKind::Scalar(_), ScalarArg::U32(v)) => Some(i64::from(*v)),
        (ParamKind::Scalar(_), ScalarArg::I64(v)) => Some(*v),
        (ParamKind::Scalar(_), ScalarArg::I8(v)) => Some(i64::from(*v)),
        (ParamKind::Scalar(_), ScalarArg::I16(v)) => Some(i64::from(*v)),
        (ParamKind::Scalar(_), ScalarArg::U8(v)) => Some(i64::from(*v)),
        (ParamKind::Scalar(_), ScalarArg::U16(v)) => Some(i64::from(*v)),
        _ => None,
    }
}

/// The view of operand `op` for a launch with these arguments, or why it cannot have a map.
///
/// The view starts at the pointer argument's first element and has rows `row_stride`
/// elements apart, as many as fit whole in the buffer; the column stride must be 1, the address
/// and the row pitch multiples of 16 bytes, and both extents below 2^31 (the entry computes
/// box coordinates in `i32`).
pub(crate) fn view(info: &KernelInfo, op: &TmaOperand, args: &[PtrArg<'_>], scalars: &[ScalarArg]) -> Result<View, String> {
    let k = info.params.get(..op.ptr).ok_or("no such parameter")?.iter().filter(|p| matches!(p.kind, ParamKind::Ptr(_))).count();
    let arg = args.get(k).ok_or("no pointer argument")?;
    let ArgMem::Cuda { ptr, len } = arg.mem else { return Err("not on a CUDA device".into()) };
    let elem_bytes = arg.kind.size_bytes() as u64;
    if !matches!(arg.kind, DTypeKind::F16 | DTypeKind::BF16) {
        return Err(format!("element type {:?} (maps are built for f16 and bf16)", arg.kind));
    }
    if let Some(c) = op.col_stride {
        let v = scalar_value(info, scalars, c).ok_or("no column stride value")?;
        if v != 1 {
            return Err(format!("column stride {v} (must be 1)"));
        }
    }
    let w = scalar_value(info, scalars, op.row_stride).ok_or("no row stride value")?;
    let addr = ptr + (arg.offset as u64) * elem_bytes;
    let elems = len.saturating_sub(arg.offset) as u64;
    if w <= 0 || w > i64::from(i32::MAX) {
        return Err(format!("row stride {w} (must be in 1..=2^31-1)"));
    }
    let width = w as u64;
    if !(width * elem_bytes).is_multiple_of(16) {
        return Err(format!("row pitch of {} bytes (must be a multiple of 16)", width * elem_bytes));
    }
    if !addr.is_multiple_of(16) {
        return Err(format!("address {addr:#x} (must be 16-byte aligned)"));
    }
    let height = elems / width;
    if height == 0 || height > i32::MAX as u64 {
        return Err(format!("{height} whole rows (must be in 1..=2^31-1)"));
    }
    Ok(View { addr, width, height, elem_bytes })
}

/// `cuTensorMapEncodeTiled` of `view` for `op`.
fn encode(dev: &CudaDevice, op: &TmaOperand, kind: DTypeKind, v: View) -> Result<[u8; MAP_BYTES], DeviceError> {
    use sys::CUtensorMapSwizzle as Swz;
    let dtype = match kind {
        DTypeKind::BF16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    let swizzle = match op.swizzle {
        128 => Swz::CU_TENSOR_MAP_SWIZZLE_128B,
        64 => Swz::CU_TENSOR_MAP_SWIZZLE_64B,
        32 => Swz::CU_TENSOR_MAP_SWIZZLE_32B,
        _ => Swz::CU_TENSOR_MAP_SWIZZLE_NONE,
    };
    let dims = [v.width, v.height];
    let strides = [v.width * v.elem_bytes];
    let boxes = [op.box_inner, op.box_rows];
    let elem_strides = [1u32, 1];
    let mut map = sys::CUtensorMap { opaque: [0; 16] };
    dev.call("cuTensorMapEncodeTiled", || {
        // SAFETY: every array has the length the rank (2) asks for; the address is only
        // recorded in the map.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                dtype,
                2,
                v.addr as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                elem_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
            .result()
        }
    })?;
    let mut bytes = [0u8; MAP_BYTES];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(map.opaque) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    Ok(bytes)
}

/// Whether tensor maps are off ([`Settings::tma`](crate::Settings::tma) is false):
/// launches build none, so entries copy every operand with `cp.async` (to compare the two).
fn disabled() -> bool {
    !crate::Settings::current().tma
}

/// The two hidden parameters of an entry with tensor maps: the maps' address in global memory
/// and the mask of the valid ones (written to the device in stream order, before the launch).
pub(crate) fn tma_slots(dev: &CudaDevice, info: &KernelInfo, ops: &[TmaOperand], args: &[PtrArg<'_>], scalars: &[ScalarArg]) -> Result<[u64; 2], DeviceError> {
    if disabled() {
        return Ok([0, 0]);
    }
    let mut bytes = vec![0u8; ops.len().min(MAX_MAPS) * MAP_BYTES];
    let mut mask = 0u32;
    let mut arena = dev.tma.lock().unwrap_or_else(PoisonError::into_inner);
    for (i, op) in ops.iter().take(MAX_MAPS).enumerate() {
        let Ok(v) = view(info, op, args, scalars) else { continue };
        let kind = match info.params[op.ptr].kind {
            ParamKind::Ptr(k) => k,
            ParamKind::Scalar(_) => continue,
        };
        // A map the driver refuses (a box larger than the view, say) is one the entry does
        // without.
        if let Some(m) = arena.map(dev, op, kind, v) {
            bytes[i * MAP_BYTES..(i + 1) * MAP_BYTES].copy_from_slice(&m);
            mask |= 1 << i;
        }
    }
    if mask == 0 {
        return Ok([0, 0]);
    }
    let buffer = match arena.buffer {
        Some(b) => b,
        None => {
            let n = MAX_MAPS * MAP_BYTES;
            // SAFETY: a plain allocation; 256-byte aligned (maps need 64).
            let b = dev.call(format!("cuMemAlloc ({n} bytes, tensor maps)"), || unsafe { result::malloc_sync(n) })?;
            arena.buffer = Some(b);
            b
        }
    };
    if arena.last != bytes {
        let stream = dev.stream.cu_stream();
        // SAFETY: `buffer` holds MAX_MAPS maps; the copy from pageable memory is staged before
        // the call returns, and is ordered after every earlier kernel that reads the buffer.
        dev.call("cuMemcpyHtoDAsync (tensor maps)", || unsafe { result::memcpy_htod_async(buffer, &bytes, stream) })?;
        arena.last = bytes;
    }
    Ok([buffer, u64::from(mask)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ModuleInfo, ParamInfo};

    static INFO: KernelInfo = KernelInfo {
        name: "mm",
        params: &[
            ParamInfo { name: "a", kind: ParamKind::Ptr(DTypeKind::F16) },
            ParamInfo { name: "x", kind: ParamKind::Ptr(DTypeKind::F32) },
            ParamInfo { name: "sr", kind: ParamKind::Scalar(DTypeKind::I32) },
            ParamInfo { name: "sc", kind: ParamKind::Scalar(DTypeKind::I32) },
        ],
        configs: &[],
        key: &[],
        instances: &[],
        module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
    };
    const OP: TmaOperand = TmaOperand { ptr: 0, row_stride: 2, col_stride: Some(3), box_inner: 64, box_rows: 128, swizzle: 128 };

    fn view_of(ptr: u64, len: usize, offset: usize, sr: i32, sc: i32) -> Result<View, String> {
        let dev = crate::Device::cpu();
        let a = PtrArg { name: "a", kind: DTypeKind::F16, device: &dev, mem: ArgMem::Cuda { ptr, len }, offset };
        let x = PtrArg { name: "x", kind: DTypeKind::F32, device: &dev, mem: ArgMem::Cuda { ptr: 0x10_0000, len: 4 }, offset: 0 };
        view(&INFO, &OP, &[a, x], &[ScalarArg::I32(sr), ScalarArg::I32(sc)])
    }

    #[test]
    fn encoded_maps_are_reused_and_the_oldest_dropped() {
        let mut arena = TmaArena::default();
        let v = |addr: u64| View { addr, width: 64, height: 16, elem_bytes: 2 };
        let mut calls = 0;
        let mut get = |arena: &mut TmaArena, addr: u64, ok: bool| {
            arena.map_with((OP, DTypeKind::F16, v(addr)), || {
                calls += 1;
                ok.then_some([addr as u8; MAP_BYTES])
            })
        };
        assert_eq!(get(&mut arena, 0x100, true), Some([0u8; MAP_BYTES]));
        assert_eq!(get(&mut arena, 0x100, true), Some([0u8; MAP_BYTES]));
        // A refused view is remembered as refused.
        assert_eq!(get(&mut arena, 0x200, false), None);
        assert_eq!(get(&mut arena, 0x200, true), None);
        for i in 0..ENCODED_MAX as u64 {
            get(&mut arena, 0x1000 + 0x100 * i, true);
        }
        assert_eq!(arena.encoded.len(), ENCODED_MAX);
        // 0x100 was pushed out: encoded again.
        get(&mut arena, 0x100, true);
        assert_eq!(calls, 2 + ENCODED_MAX + 1);
    }

    #[test]
    fn views_start_at_the_argument_and_hold_whole_rows() {
        // 1000 f16 elements from element 8 of the allocation, rows of 64: 15 whole rows.
        assert_eq!(view_of(0x20_0000, 1008, 8, 64, 1), Ok(View { addr: 0x20_0010, width: 64, height: 15, elem_bytes: 2 }));
        // Rows exactly filling the buffer.
        assert_eq!(view_of(0x20_0000, 4096, 0, 64, 1).unwrap().height, 64);
    }

    #[test]
    fn views_the_copy_engine_cannot_take_are_refused_with_the_reason() {
        let why = |r: Result<View, String>| r.unwrap_err();
        assert_eq!(why(view_of(0x20_0000, 4096, 0, 64, 2)), "column stride 2 (must be 1)");
        assert_eq!(why(view_of(0x20_0000, 4096, 0, 60, 1)), "row pitch of 120 bytes (must be a multiple of 16)");
        assert_eq!(why(view_of(0x20_0000, 4096, 1, 64, 1)), "address 0x200002 (must be 16-byte aligned)");
        assert_eq!(why(view_of(0x20_0000, 4096, 0, 0, 1)), "row stride 0 (must be in 1..=2^31-1)");
        assert_eq!(why(view_of(0x20_0000, 4096, 0, -64, 1)), "row stride -64 (must be in 1..=2^31-1)");
        assert_eq!(why(view_of(0x20_0000, 32, 0, 64, 1)), "0 whole rows (must be in 1..=2^31-1)");
        // Only 16-bit operands get maps.
        let dev = crate::Device::cpu();
        let x = PtrArg { name: "x", kind: DTypeKind::F32, device: &dev, mem: ArgMem::Cuda { ptr: 0x10_0000, len: 4096 }, offset: 0 };
        let op = TmaOperand { ptr: 1, ..OP };
        let a = PtrArg { name: "a", kind: DTypeKind::F16, device: &dev, mem: ArgMem::Cuda { ptr: 0x20_0000, len: 4096 }, offset: 0 };
        assert!(view(&INFO, &op, &[a, x], &[ScalarArg::I32(64), ScalarArg::I32(1)]).unwrap_err().starts_with("element type F32"));
        // Host tensors have no device address.
        let host = crate::Tensor::<crate::f16>::zeros(&dev, &[4]).unwrap();
        let h = crate::launch::ptr_arg("a", &host);
        assert_eq!(view(&INFO, &OP, &[h, x], &[ScalarArg::I32(64), ScalarArg::I32(1)]).unwrap_err(), "not on a CUDA device");
    }
}
