//! DLPack import and export (feature `dlpack`), through [`dlpark`](https://docs.rs/dlpark):
//! tensors pass to and from PyTorch, JAX, CuPy, NumPy and any other DLPack library without a
//! copy, on the CPU and (with `cuda`) on CUDA GPUs.

use std::ffi::c_void;

use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType};
use dlpark::metadata::Dynamic;
use dlpark::{DlpackFlags, Managed, ManagedTensorBase};

use super::Tensor;
use crate::device::Device;
use crate::dtype::{DType, DTypeKind};
use crate::error::TensorError;

/// The DLPack element type of `kind` (`bool` is DLPack's 8-bit bool).
///
/// ```
/// use kernel_runtime::{dlpack_dtype, DTypeKind};
/// let t = dlpack_dtype(DTypeKind::BF16);
/// assert_eq!((t.bits, t.lanes), (16, 1));
/// ```
pub fn dlpack_dtype(kind: DTypeKind) -> DLDataType {
    let code = match kind {
        DTypeKind::F16 | DTypeKind::F32 | DTypeKind::F64 => DLDataTypeCode::FLOAT,
        DTypeKind::BF16 => DLDataTypeCode::BFLOAT,
        DTypeKind::I8 | DTypeKind::I16 | DTypeKind::I32 | DTypeKind::I64 => DLDataTypeCode::INT,
        DTypeKind::U8 | DTypeKind::U16 | DTypeKind::U32 => DLDataTypeCode::UINT,
        DTypeKind::Bool => DLDataTypeCode::BOOL,
        DTypeKind::F8E4M3 => DLDataTypeCode::FLOAT8_E4M3FN,
        DTypeKind::F8E5M2 => DLDataTypeCode::FLOAT8_E5M2,
    };
    DLDataType::scalar(code, (kind.size_bytes() * 8) as u8)
}

/// A DLPack element type in words: `float32`, `bfloat16`, `complex64`, `int8x4` (4 lanes).
fn dtype_name(t: DLDataType) -> String {
    let code = match t.code {
        DLDataTypeCode::INT => "int",
        DLDataTypeCode::UINT => "uint",
        DLDataTypeCode::FLOAT => "float",
        DLDataTypeCode::BFLOAT => "bfloat",
        DLDataTypeCode::COMPLEX => "complex",
        DLDataTypeCode::BOOL => "bool",
        DLDataTypeCode::OPAQUEHANDLE => "opaque",
        DLDataTypeCode::FLOAT8_E4M3FN if (t.bits, t.lanes) == (8, 1) => return "float8_e4m3fn".into(),
        DLDataTypeCode::FLOAT8_E5M2 if (t.bits, t.lanes) == (8, 1) => return "float8_e5m2".into(),
        other => return format!("DLPack type code {} of {} bits", other.0, t.bits),
    };
    match t.lanes {
        1 => format!("{code}{}", t.bits),
        n => format!("{code}{}x{n}", t.bits),
    }
}

/// The device of a DLPack tensor: the CPU for host memory (`kDLCPU`, pinned `kDLCUDAHost`),
/// the GPU of that ordinal for `kDLCUDA`.
fn device_of(d: DLDevice) -> Result<Device, TensorError> {
    match d.device_type {
        DLDeviceType::CPU | DLDeviceType::CUDAHOST => Ok(Device::cpu()),
        DLDeviceType::CUDA => {
            let ordinal = usize::try_from(d.device_id)
                .map_err(|_| TensorError::InvalidDlpack { reason: format!("negative CUDA device id {}", d.device_id) })?;
            Ok(Device::cuda(ordinal)?)
        }
        other => Err(TensorError::UnsupportedDevice { device: format!("DLPack device type {} (id {})", other.0, d.device_id) }),
    }
}

/// The DLPack device of `device`.
fn dlpack_device(device: &Device) -> DLDevice {
    match device.cuda_ordinal() {
        None => DLDevice::CPU,
        Some(i) => DLDevice::cuda(i32::try_from(i).unwrap_or(i32::MAX)),
    }
}

/// `values` as `i64`s (shape or strides for export), or why one does not fit.
fn to_i64(what: &str, values: &[usize]) -> Result<Vec<i64>, TensorError> {
    values
        .iter()
        .map(|&v| i64::try_from(v).map_err(|_| TensorError::InvalidDlpack { reason: format!("{what} {values:?} do not fit in i64") }))
        .collect()
}

impl<T: DType> Tensor<T> {
    /// A view of a DLPack tensor, without a copy (feature `dlpack`): on the CPU for host
    /// memory (`kDLCPU`, `kDLCUDAHost`), on GPU `device_id` for `kDLCUDA` (feature `cuda`).
    /// The view has the DLPack tensor's shape and strides and starts at `data + byte_offset`;
    /// its storage is the memory from there to the view's last element, so kernels that index
    /// past the view are stopped (bounds errors) rather than reaching memory DLPack did not
    /// describe. The managed tensor's deleter runs when the last view is dropped (on a GPU,
    /// after the device's queued work).
    ///
    /// Both ABIs work: `dlpark::versioned::Dlpack` (DLPack 1.x, `__dlpack__(max_version=(1, 0))`)
    /// and `dlpark::legacy::Dlpack`.
    ///
    /// # Errors
    /// [`TensorError::DTypeMismatch`] when the elements are not `T`;
    /// [`TensorError::UnsupportedDevice`] for other devices than the CPU and CUDA;
    /// [`TensorError::Device`] when the GPU cannot be opened (or without the `cuda` feature);
    /// [`TensorError::NegativeStride`] for reversed views; [`TensorError::ReadOnly`] for a
    /// versioned tensor flagged read-only; [`TensorError::Misaligned`],
    /// [`TensorError::NullPointer`] or [`TensorError::WrongDevice`] for its address;
    /// [`TensorError::InvalidDlpack`] for a descriptor that does not validate. `managed` is
    /// dropped (its deleter runs) on error.
    ///
    /// # Safety
    /// The descriptor describes memory that is valid for reads and writes of every element
    /// of the view for as long as the managed tensor is not deleted (the DLPack contract),
    /// and that the producer and others access only in order with the views made from this
    /// one while they live (on the CPU: not concurrently; on a GPU: on streams ordered with
    /// the launches, see `with_stream`, feature `cuda`).
    ///
    /// ```
    /// use kernel_runtime::{Device, Tensor, TensorError};
    /// let a = Tensor::from_vec(&Device::cpu(), &[2, 3], vec![1i32, 2, 3, 4, 5, 6]).unwrap();
    /// let exported = a.t().to_dlpack().unwrap();
    /// // SAFETY: `exported` describes `a`'s memory, which it keeps alive.
    /// let b = unsafe { Tensor::<i32>::from_dlpack(exported) }.unwrap();
    /// assert_eq!((b.shape(), b.strides()), (&[3, 2][..], &[1, 3][..]));
    /// assert_eq!(b.data_ptr(), a.data_ptr());
    /// b.fill(0);
    /// assert_eq!(a.to_vec(), vec![0; 6]);
    /// let err = unsafe { Tensor::<f32>::from_dlpack(a.to_dlpack().unwrap()) }.unwrap_err();
    /// assert_eq!(err.to_string(), "the memory holds int32 elements, but the tensor's element type is f32");
    /// ```
    pub unsafe fn from_dlpack<M: ManagedTensorBase + 'static>(managed: Managed<M>) -> Result<Self, TensorError> {
        if managed.flags().contains(DlpackFlags::READ_ONLY) {
            return Err(TensorError::ReadOnly);
        }
        let t = managed.validate().map_err(|e| TensorError::InvalidDlpack { reason: e.to_string() })?;
        if t.dtype() != dlpack_dtype(T::KIND) {
            return Err(TensorError::DTypeMismatch { expected: T::KIND, found: dtype_name(t.dtype()) });
        }
        let device = device_of(t.device())?;
        // Validated: no negative dimension, and the element count fits.
        let shape: Vec<usize> = t.shape().iter().map(|&n| n as usize).collect();
        let dl_strides = t.strides_or_compact().map_err(|e| TensorError::InvalidDlpack { reason: e.to_string() })?;
        let mut strides = Vec::with_capacity(shape.len());
        for (dim, &s) in dl_strides.iter().enumerate() {
            strides.push(usize::try_from(s).map_err(|_| TensorError::NegativeStride { dim, stride: s })?);
        }
        let len = span(&shape, &strides).ok_or_else(|| TensorError::ShapeOverflow { shape: shape.clone(), elem_bytes: size_of::<T>() })?;
        let addr = (t.data_ptr() as u64)
            .checked_add(t.byte_offset())
            .ok_or_else(|| TensorError::InvalidDlpack { reason: "data + byte_offset overflows".into() })?;
        // In range: `addr` did not overflow.
        let ptr = t.data_ptr().cast_mut().cast::<u8>().wrapping_add(t.byte_offset() as usize).cast::<T>();
        let owner: Box<dyn std::any::Any + Send + Sync> = Box::new(managed);
        #[cfg(feature = "cuda")]
        if device.is_cuda() {
            // SAFETY: the caller's contract; `owner` keeps the memory alive.
            return unsafe { Self::cuda_view(&device, addr, len, &shape, Some(&strides), Some(owner)) };
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (addr, &device);
        }
        // SAFETY: as above, for host memory.
        unsafe { Self::host_view(ptr, len, &shape, Some(&strides), Some(owner)) }
    }

    /// This view as a DLPack tensor (versioned ABI, DLPack 1.x), without a copy (feature
    /// `dlpack`): its shape, strides, dtype, device (`kDLCPU`, or `kDLCUDA` with the GPU's
    /// ordinal) and the address of its first element (`byte_offset` 0). The managed tensor
    /// holds a view of this tensor, so the memory stays alive until the consumer calls its
    /// deleter, from any thread. Writable, not flagged as a copy.
    ///
    /// On a GPU the data is ready once the work queued on the device's stream has finished: a
    /// consumer working on another stream makes it wait first (`ExternalStream::wait_for_device`,
    /// feature `cuda`), or calls [`Device::synchronize`].
    ///
    /// # Errors
    /// [`TensorError::InvalidDlpack`] when a stride does not fit in `i64`.
    ///
    /// ```
    /// use kernel_runtime::{dlpack_dtype, f16, Device, DTypeKind, Tensor};
    /// let a = Tensor::<f16>::zeros(&Device::cpu(), &[4, 5]).unwrap();
    /// let d = a.narrow(1, 1, 3).unwrap().to_dlpack().unwrap();
    /// let v = d.validate().unwrap();
    /// assert_eq!((v.shape(), v.strides()), (&[4i64, 3][..], Some(&[5i64, 1][..])));
    /// assert_eq!(v.dtype(), dlpack_dtype(DTypeKind::F16));
    /// assert_eq!(v.data_ptr() as u64, a.data_ptr() + 2);
    /// ```
    pub fn to_dlpack(&self) -> Result<dlpark::versioned::Dlpack, TensorError> {
        self.to_dlpack_as()
    }

    /// [`Tensor::to_dlpack`] for either ABI: `M` is `dlpark::ffi::DLManagedTensorVersioned`
    /// or `dlpark::ffi::DLManagedTensor` (legacy, for consumers of DLPack 0.x).
    ///
    /// # Errors
    /// As [`Tensor::to_dlpack`].
    ///
    /// ```
    /// use kernel_runtime::dlpark::ffi::DLManagedTensor;
    /// use kernel_runtime::{Device, Tensor};
    /// let a = Tensor::from_vec(&Device::cpu(), &[2], vec![1.0f64, 2.0]).unwrap();
    /// let legacy = a.to_dlpack_as::<DLManagedTensor>().unwrap();
    /// let b = unsafe { Tensor::<f64>::from_dlpack(legacy) }.unwrap();
    /// assert_eq!(b.to_vec(), vec![1.0, 2.0]);
    /// ```
    pub fn to_dlpack_as<M: ManagedTensorBase>(&self) -> Result<Managed<M>, TensorError> {
        let shape = to_i64("shape", &self.shape)?;
        let strides = to_i64("strides", &self.strides)?;
        let data = self.data_ptr() as usize as *mut c_void;
        let mut init = Dynamic::new(shape, strides)
            .initialize_as::<M>(Box::new(self.clone()))
            .map_err(|e| TensorError::InvalidDlpack { reason: e.to_string() })?;
        init.set_data(data).set_device(dlpack_device(&self.device)).set_dtype(dlpack_dtype(T::KIND));
        // SAFETY: `data` is the view's first element, and the context (a view of this tensor,
        // which holds its storage) keeps every element of the view valid until the deleter
        // runs; shape and strides are copied into the managed allocation; no flags: the
        // memory is writable and shared, not a copy.
        Ok(unsafe { init.finish() })
    }
}

/// Elements from a view's first element to its last, inclusive (0 when it is empty), or
/// `None` when that overflows `usize`.
fn span(shape: &[usize], strides: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().zip(strides).try_fold(1usize, |acc, (&n, &s)| (n - 1).checked_mul(s).and_then(|d| acc.checked_add(d)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use dlpark::ffi::{DLManagedTensor, DLManagedTensorVersioned};
    use dlpark::{legacy, versioned};
    use half::{bf16, f16};

    use super::*;

    /// Counts its drops (the DLPack deleter dropping the producer's context).
    struct Producer(Vec<f32>, Arc<AtomicUsize>);
    impl Drop for Producer {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A DLPack tensor made by another "library": `data` (owned by the managed tensor), the
    /// layout, `byte_offset`, device and dtype as given.
    fn produce<M: ManagedTensorBase>(
        data: Vec<f32>,
        shape: &[i64],
        strides: &[i64],
        byte_offset: u64,
        device: DLDevice,
        dtype: DLDataType,
        drops: &Arc<AtomicUsize>,
    ) -> Managed<M> {
        let mut p = Box::new(Producer(data, Arc::clone(drops)));
        let ptr = p.0.as_mut_ptr().cast::<c_void>();
        let mut init = Dynamic::new(shape.to_vec(), strides.to_vec()).initialize_as::<M>(p).unwrap();
        init.set_data(ptr).set_byte_offset(byte_offset).set_device(device).set_dtype(dtype);
        // SAFETY: `ptr` is the producer's vector, which the context keeps; the tests' layouts
        // stay within it (or are rejected before any access).
        unsafe { init.finish() }
    }

    #[test]
    fn import_honours_strides_and_byte_offset_without_a_copy() {
        let drops = Arc::new(AtomicUsize::new(0));
        let data: Vec<f32> = (0..20).map(|i| i as f32).collect();
        let base = data.as_ptr() as u64;
        // Rows 1..3 and columns 1, 3 of a 4 x 5 matrix: byte_offset 24 (element 6), strides
        // [5, 2].
        let m: versioned::Dlpack = produce(data, &[2, 2], &[5, 2], 24, DLDevice::CPU, DLDataType::F32, &drops);
        // SAFETY: the producer's memory, accessed only through the view.
        let t = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap();
        assert!(t.device().is_cpu());
        assert_eq!((t.shape(), t.strides(), t.storage_offset()), (&[2, 2][..], &[5, 2][..], 0));
        assert_eq!(t.data_ptr(), base + 24);
        assert_eq!(t.to_vec(), vec![6.0, 8.0, 11.0, 13.0]);
        // Writes reach the producer's memory; the storage is the view's span (elements 6..=13).
        t.t().narrow(0, 1, 1).unwrap().fill(-1.0);
        let whole = unsafe { Tensor::<f32>::from_raw_host(t.data_ptr() as usize as *mut f32, 8, &[8], None) }.unwrap();
        assert_eq!(whole.to_vec(), vec![6.0, 7.0, -1.0, 9.0, 10.0, 11.0, 12.0, -1.0]);
        drop(whole);
        assert_eq!(t.try_duplicate().unwrap().to_vec(), t.to_vec());
        let v = t.narrow(0, 1, 1).unwrap();
        drop(t);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "a view is alive");
        drop(v);
        assert_eq!(drops.load(Ordering::SeqCst), 1, "the deleter ran once, with the last view");
    }

    #[test]
    fn import_accepts_both_abis_and_implicit_strides() {
        let drops = Arc::new(AtomicUsize::new(0));
        let m: legacy::Dlpack = produce(vec![1.0, 2.0, 3.0], &[3], &[1], 0, DLDevice::CPU, DLDataType::F32, &drops);
        let t = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap();
        assert_eq!(t.to_vec(), vec![1.0, 2.0, 3.0]);
        // A legacy descriptor may leave strides null: row-major.
        let mut p = Box::new(Producer((0..6).map(|i| i as f32).collect(), Arc::clone(&drops)));
        let ptr = p.0.as_mut_ptr().cast::<c_void>();
        let mut init = Dynamic::new(vec![2i64, 3], vec![3i64, 1]).initialize_as::<DLManagedTensor>(p).unwrap();
        init.set_data(ptr).set_device(DLDevice::CPU).set_dtype(DLDataType::F32);
        init.tensor_mut().strides = std::ptr::null_mut();
        let m = unsafe { init.finish() };
        let t2 = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap();
        assert_eq!((t2.strides(), t2.t().to_vec()), (&[3usize, 1][..], vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]));
        drop((t, t2));
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn import_errors_are_typed_and_release_the_tensor() {
        let drops = Arc::new(AtomicUsize::new(0));
        let cases: Vec<(Managed<DLManagedTensorVersioned>, TensorError)> = vec![
            (
                produce(vec![0.0; 4], &[4], &[1], 0, DLDevice::CPU, DLDataType::I32, &drops),
                TensorError::DTypeMismatch { expected: DTypeKind::F32, found: "int32".into() },
            ),
            (
                produce(vec![0.0; 4], &[2], &[1], 0, DLDevice::CPU, DLDataType::new(DLDataTypeCode::FLOAT, 32, 2), &drops),
                TensorError::DTypeMismatch { expected: DTypeKind::F32, found: "float32x2".into() },
            ),
            (
                produce(vec![0.0; 4], &[2], &[1], 0, DLDevice::metal(0), DLDataType::F32, &drops),
                TensorError::UnsupportedDevice { device: "DLPack device type 8 (id 0)".into() },
            ),
            (
                produce(vec![0.0; 4], &[2, 2], &[2, -1], 4, DLDevice::CPU, DLDataType::F32, &drops),
                TensorError::NegativeStride { dim: 1, stride: -1 },
            ),
            (
                produce(vec![0.0; 4], &[2], &[1], 2, DLDevice::CPU, DLDataType::F32, &drops),
                TensorError::Misaligned { addr: 0, dtype: DTypeKind::F32, align: 4 },
            ),
            (
                produce(vec![0.0; 4], &[-2], &[1], 0, DLDevice::CPU, DLDataType::F32, &drops),
                TensorError::InvalidDlpack { reason: "shape dimension 0 is negative: -2".into() },
            ),
        ];
        let n = cases.len();
        for (m, expected) in cases {
            let err = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap_err();
            match (&err, &expected) {
                // The address depends on the allocation.
                (TensorError::Misaligned { dtype, align, addr }, TensorError::Misaligned { .. }) => {
                    assert_eq!((*dtype, *align, addr % 4), (DTypeKind::F32, 4, 2), "{err}");
                }
                _ => assert_eq!(err, expected),
            }
        }
        assert_eq!(drops.load(Ordering::SeqCst), n, "every rejected tensor was deleted");
        // A read-only tensor is refused: kernels may write to any tensor.
        let mut m: versioned::Dlpack = produce(vec![0.0; 2], &[2], &[1], 0, DLDevice::CPU, DLDataType::F32, &drops);
        // SAFETY: marking the test's own tensor read-only asserts nothing false.
        unsafe { *m.flags_mut() = DlpackFlags::READ_ONLY };
        assert_eq!(unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap_err(), TensorError::ReadOnly);
    }

    /// A CUDA tensor: the GPU when there is one, else a typed error (no driver, or no CUDA
    /// backend), never a panic.
    #[test]
    fn import_of_a_cuda_tensor_without_a_gpu_is_an_error() {
        if Device::cuda(0).is_ok() {
            return;
        }
        let drops = Arc::new(AtomicUsize::new(0));
        let m: versioned::Dlpack = produce(vec![0.0; 2], &[2], &[1], 0, DLDevice::cuda(0), DLDataType::F32, &drops);
        let err = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap_err();
        assert!(matches!(err, TensorError::Device(_)), "{err}");
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn export_describes_the_view_and_keeps_it_alive() {
        let dev = Device::cpu();
        let a = Tensor::from_vec(&dev, &[3, 4], (0..12).map(|i| i as f32).collect()).unwrap();
        let v = a.narrow(0, 1, 2).unwrap().narrow(1, 1, 2).unwrap().t();
        let m = v.to_dlpack().unwrap();
        drop((a, v));
        let d = m.validate().unwrap();
        assert_eq!((d.shape(), d.strides()), (&[2i64, 2][..], Some(&[1i64, 4][..])));
        assert_eq!((d.device(), d.dtype(), d.byte_offset()), (DLDevice::CPU, DLDataType::F32, 0));
        assert_eq!(m.flags(), DlpackFlags::empty());
        // The storage outlives the tensors it came from: read it back through an import.
        let back = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap();
        assert_eq!(back.to_vec(), vec![5.0, 9.0, 6.0, 10.0]);
        // Every dtype maps to its DLPack code and width.
        let f = Tensor::from_vec(&dev, &[1], vec![f16::ONE]).unwrap().to_dlpack().unwrap();
        assert_eq!(f.validate().unwrap().dtype(), DLDataType::scalar(DLDataTypeCode::FLOAT, 16));
        let b = Tensor::from_vec(&dev, &[1], vec![bf16::ONE]).unwrap().to_dlpack().unwrap();
        assert_eq!(b.validate().unwrap().dtype(), DLDataType::scalar(DLDataTypeCode::BFLOAT, 16));
        for (kind, dl) in [
            (DTypeKind::F32, DLDataType::F32),
            (DTypeKind::F64, DLDataType::F64),
            (DTypeKind::I8, DLDataType::I8),
            (DTypeKind::I16, DLDataType::I16),
            (DTypeKind::I32, DLDataType::I32),
            (DTypeKind::I64, DLDataType::I64),
            (DTypeKind::U8, DLDataType::U8),
            (DTypeKind::U16, DLDataType::U16),
            (DTypeKind::U32, DLDataType::U32),
            (DTypeKind::Bool, DLDataType::BOOL),
            (DTypeKind::F8E4M3, DLDataType::scalar(DLDataTypeCode::FLOAT8_E4M3FN, 8)),
            (DTypeKind::F8E5M2, DLDataType::scalar(DLDataTypeCode::FLOAT8_E5M2, 8)),
        ] {
            assert_eq!(dlpack_dtype(kind), dl, "{kind}");
        }
        assert_eq!(dtype_name(DLDataType::C64), "complex64");
        assert_eq!(dtype_name(dlpack_dtype(DTypeKind::F8E4M3)), "float8_e4m3fn");
    }

    /// Export, import in "another library" (here: this crate again, through the legacy ABI),
    /// write there, see it here: one memory, no copy, kept alive by whichever side is last.
    #[test]
    fn round_trip_shares_memory_both_ways() {
        let a = Tensor::from_vec(&Device::cpu(), &[2, 3], vec![1i16, 2, 3, 4, 5, 6]).unwrap();
        let legacy = a.narrow(1, 1, 2).unwrap().to_dlpack_as::<DLManagedTensor>().unwrap();
        let b = unsafe { Tensor::<i16>::from_dlpack(legacy) }.unwrap();
        assert_eq!((b.shape(), b.strides(), b.to_vec()), (&[2, 2][..], &[3, 1][..], vec![2, 3, 5, 6]));
        assert_eq!(b.data_ptr(), a.data_ptr() + 2);
        b.narrow(0, 1, 1).unwrap().fill(0);
        assert_eq!(a.to_vec(), vec![1, 2, 3, 4, 0, 0]);
        drop(a);
        assert_eq!(b.to_vec(), vec![2, 3, 0, 0]);
        let again = unsafe { Tensor::<i16>::from_dlpack(b.to_dlpack().unwrap()) }.unwrap();
        assert_eq!(again.data_ptr(), b.data_ptr());
    }
}
