//! `kernel_interop`: a Python extension module that runs kernels of this repository's
//! `examples` crate on PyTorch tensors (or any DLPack producer: JAX, CuPy, NumPy), without a
//! copy.
//!
//! - Arguments come in through the DLPack protocol (`__dlpack__`, negotiated by `dlpark`) and
//!   become `kernel_runtime::Tensor` views of the producer's memory
//!   ([`Tensor::from_dlpack`]): same address, strides and offset honoured.
//! - Kernels run on the caller's stream (`stream=torch.cuda.current_stream().cuda_stream`;
//!   `0`, the default, is the legacy default stream, PyTorch's default), through
//!   [`with_stream`], so they are ordered with the caller's work without a host wait.
//! - Results are [`KTensor`]s, which export themselves through `__dlpack__`
//!   (`torch.from_dlpack(result)`), again without a copy; their memory lives until the consumer
//!   drops it.
//!
//! `check.py` beside this crate checks results against PyTorch and the pointers (no copy).

use std::ffi::c_void;
use std::fmt::Display;

use dlpark::ffi::{DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned};
use dlpark::python::consumer::stream as dl_stream;
use dlpark::python::{
    export_dlpack, from_dlpack, CudaStreamRequest, DlpackExporter, DlpackStream, ExportRequest, ImportedDlpack, StreamArg,
};
use dlpark::{DlpackFlags, Managed};
use kernel_runtime::{f16, with_stream, DType, Device, Tensor, TensorError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// A Python `ValueError` with `e`'s message (a tensor that cannot be viewed: dtype, device,
/// layout).
fn value_error(e: impl Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A Python `RuntimeError` with `e`'s message (a launch or a device that failed).
fn runtime_error(e: impl Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

/// The consumer stream given to a producer's `__dlpack__`: the producer makes its data ready
/// on it.
struct Consumer {
    stream: usize,
}

// SAFETY: `as_python_arg` encodes the caller's stream as the protocol asks; no C Exchange
// producer stream is consumed (the default `wait_for_producer` declines).
unsafe impl DlpackStream for Consumer {
    fn as_python_arg(&self, _py: Python<'_>, device: DLDevice) -> PyResult<StreamArg> {
        Ok(match device.device_type {
            DLDeviceType::CUDA => dl_stream::cuda(self.stream as *mut c_void),
            _ => dl_stream::none(),
        })
    }
}

/// `obj` (anything with `__dlpack__`, or a DLPack capsule) as a view of `T`s, without a copy.
fn import<T: DType>(obj: &Bound<'_, PyAny>, stream: usize) -> PyResult<Tensor<T>> {
    let imported = from_dlpack(obj.as_borrowed(), Some(&Consumer { stream }), Some(false))?;
    // SAFETY: the producer keeps the memory alive until the managed tensor's deleter runs
    // (when the view's last clone is dropped); its work on the memory is ordered on `stream`,
    // where the kernels run, and the caller does not touch the tensor during the call.
    let t = match imported {
        ImportedDlpack::Legacy(m) => unsafe { Tensor::<T>::from_dlpack(m) },
        ImportedDlpack::Versioned(m) => unsafe { Tensor::<T>::from_dlpack(m) },
    };
    t.map_err(value_error)
}

/// Runs `f` with its launches on `stream` of `device` (a GPU), or as it is (the CPU).
fn on_stream<R>(device: &Device, stream: usize, f: impl FnOnce() -> R) -> PyResult<R> {
    if device.is_cpu() {
        return Ok(f());
    }
    // SAFETY: the caller passes a live stream of the device (PyTorch's current stream).
    let s = unsafe { device.wrap_raw_stream(stream as *mut _) }.map_err(value_error)?;
    Ok(with_stream(&s, f))
}

/// `x = leaky_relu(x)` in place (float16, contiguous; `examples::activation`), on `stream`.
#[pyfunction]
#[pyo3(signature = (x, stream = 0))]
fn leaky_relu_(x: &Bound<'_, PyAny>, stream: usize) -> PyResult<()> {
    let t = import::<f16>(x, stream)?;
    on_stream(t.device(), stream, || examples::activation::leaky_relu_inplace(&t))?.map_err(runtime_error)
}

/// `x + y` (float32, any 2-D layout; `examples::vector_add`), a new tensor, on `stream`.
#[pyfunction]
#[pyo3(signature = (x, y, stream = 0))]
fn add(x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>, stream: usize) -> PyResult<KTensor> {
    let (x, y) = (import::<f32>(x, stream)?, import::<f32>(y, stream)?);
    let out = on_stream(x.device(), stream, || examples::vector_add::add(&x, &y))?.map_err(runtime_error)?;
    Ok(KTensor { t: out })
}

/// The row-wise softmax of a 2-D float32 tensor (`examples::softmax`), a new tensor, on
/// `stream`.
#[pyfunction]
#[pyo3(signature = (x, stream = 0))]
fn softmax(x: &Bound<'_, PyAny>, stream: usize) -> PyResult<KTensor> {
    let x = import::<f32>(x, stream)?;
    let out = on_stream(x.device(), stream, || examples::softmax::softmax(&x))?.map_err(runtime_error)?;
    Ok(KTensor { t: out })
}

/// The address at which the imported view of `x` (float32 or float16) starts: equal to
/// `x.data_ptr()` when nothing was copied.
#[pyfunction]
#[pyo3(signature = (x, stream = 0))]
fn view_ptr(x: &Bound<'_, PyAny>, stream: usize) -> PyResult<u64> {
    match import::<f32>(x, stream) {
        Ok(t) => Ok(t.data_ptr()),
        Err(_) => Ok(import::<f16>(x, stream)?.data_ptr()),
    }
}

/// A float32 tensor computed by a kernel, exported through `__dlpack__`.
#[pyclass(frozen, name = "Tensor")]
struct KTensor {
    t: Tensor<f32>,
}

#[pymethods]
impl KTensor {
    /// The DLPack export (`torch.from_dlpack(t)` calls it): a view of this tensor's memory.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(u32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let request = ExportRequest::parse(stream.as_ref(), max_version, dl_device, copy)?;
        export_dlpack(self, py, request)
    }

    /// `(device type, device id)`: `(1, 0)` for the CPU, `(2, n)` for `cuda:n`.
    fn __dlpack_device__(&self) -> (u32, i32) {
        self.device().into()
    }

    /// The address of the first element (PyTorch's `data_ptr()` of the import).
    fn data_ptr(&self) -> u64 {
        self.t.data_ptr()
    }

    /// The shape.
    #[getter]
    fn shape(&self) -> Vec<usize> {
        self.t.shape().to_vec()
    }
}

impl DlpackExporter for KTensor {
    fn device(&self) -> DLDevice {
        match self.t.device().cuda_ordinal() {
            None => DLDevice::CPU,
            Some(i) => DLDevice::cuda(i as i32),
        }
    }

    fn flags(&self) -> DlpackFlags {
        DlpackFlags::empty()
    }

    /// Makes the consumer's stream wait for the work queued on the tensor's device (the
    /// kernel that computed it), as the protocol asks; no stream (`None`) means the legacy
    /// default stream, `-1` no synchronization.
    fn prepare_export(&self, _py: Python<'_>, request: &ExportRequest<'_>) -> PyResult<()> {
        let device = self.t.device();
        if device.is_cpu() {
            return Ok(());
        }
        let raw: usize = match request.cuda_stream()? {
            CudaStreamRequest::NoSync => return Ok(()),
            CudaStreamRequest::Omitted | CudaStreamRequest::LegacyDefault => 0,
            CudaStreamRequest::PerThreadDefault => 2,
            CudaStreamRequest::Pointer(p) => p,
        };
        // SAFETY: the consumer passes a live stream of the device.
        let s = unsafe { device.wrap_raw_stream(raw as *mut _) }.map_err(value_error)?;
        s.wait_for_device().map_err(runtime_error)
    }

    fn export_legacy(&self, _py: Python<'_>) -> PyResult<Managed<DLManagedTensor>> {
        self.t.to_dlpack_as().map_err(|e: TensorError| value_error(e))
    }

    fn export_versioned(&self, _py: Python<'_>) -> PyResult<Managed<DLManagedTensorVersioned>> {
        self.t.to_dlpack().map_err(value_error)
    }
}

/// The Python module.
#[pymodule]
fn kernel_interop(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(leaky_relu_, m)?)?;
    m.add_function(wrap_pyfunction!(add, m)?)?;
    m.add_function(wrap_pyfunction!(softmax, m)?)?;
    m.add_function(wrap_pyfunction!(view_ptr, m)?)?;
    m.add_class::<KTensor>()?;
    Ok(())
}
