//! This repository's kernels as candle custom ops, running on candle's own storage without a
//! copy: a row-wise softmax (`CustomOp1`, `examples::softmax::softmax_into`, writing into memory
//! candle allocates) and an in-place leaky ReLU (`InplaceOp1`, `examples::activation`).
//!
//! On a GPU (feature `cuda`) the ops view candle's `CudaSlice`s ([`Tensor::from_cuda_view`])
//! and launch on candle's stream ([`with_stream`]); on the CPU they view candle's host memory.
//! The program checks the results against float64 references and that the kernels wrote
//! candle's memory (same addresses), and prints `N passed, 0 failed`.
//!
//! `cargo run --release` (CPU), `cargo run --release --features cuda` (GPU 0 when there is
//! one; see README.md for building candle's CUDA kernels).

use std::sync::Mutex;

use candle_core::{CpuStorage, CustomOp1, DType, InplaceOp1, Layout, Shape, Storage};
use examples::activation::leaky_relu_inplace;
use examples::softmax::softmax_into;
use kernel_runtime::{f16, Tensor};

/// Addresses the ops saw (input, output), to check that they are candle's.
static SEEN: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// A candle error carrying `e`.
fn wrap(e: impl std::error::Error + Send + Sync + 'static) -> candle_core::Error {
    candle_core::Error::wrap(e)
}

/// Row-wise softmax of a 2-D f32 tensor.
struct Softmax;

impl CustomOp1 for Softmax {
    fn name(&self) -> &'static str {
        "kernel-rs-softmax"
    }

    /// Views candle's host memory; writes into a vector that becomes candle's output.
    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (rows, cols) = layout.shape().dims2()?;
        let data = &storage.as_slice::<f32>()?[layout.start_offset()..];
        // SAFETY: candle keeps `data` alive during the call; the kernel only reads `x` (the
        // pointer is made mutable for the view type, never written through).
        let x = unsafe { Tensor::from_raw_host(data.as_ptr().cast_mut(), data.len(), &[rows, cols], Some(layout.stride())) }.map_err(wrap)?;
        let mut out = vec![0.0f32; rows * cols];
        // SAFETY: `out` outlives the view, dropped before `out` is used.
        let o = unsafe { Tensor::from_host_slice(&mut out, &[rows, cols], None) }.map_err(wrap)?;
        softmax_into(&x, &o).map_err(wrap)?;
        SEEN.lock().unwrap().push((x.data_ptr(), o.data_ptr()));
        drop((x, o));
        Ok((CpuStorage::F32(out), Shape::from((rows, cols))))
    }

    /// Views candle's `CudaSlice`s (input, and an output candle allocates) and launches on
    /// candle's stream.
    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, storage: &candle_core::CudaStorage, layout: &Layout) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        use kernel_runtime::with_stream;
        let (rows, cols) = layout.shape().dims2()?;
        let dev = &storage.device;
        let input = storage.as_cuda_slice::<f32>()?;
        let start = layout.start_offset();
        // SAFETY: candle keeps the storage alive during the call and orders its later work on
        // its stream, where the kernel runs; the kernel only reads `x`.
        let x = unsafe { Tensor::from_cuda_view(&input.slice(start..), &[rows, cols], Some(layout.stride())) }.map_err(wrap)?;
        let mut output = dev.alloc_zeros::<f32>(rows * cols)?;
        // SAFETY: `output` outlives the view, which is dropped before candle gets `output`.
        let o = unsafe { Tensor::from_cuda_view_mut(&mut output.as_view_mut(), &[rows, cols], None) }.map_err(wrap)?;
        let stream = o.device().wrap_stream(&dev.cuda_stream()).map_err(wrap)?;
        with_stream(&stream, || softmax_into(&x, &o)).map_err(wrap)?;
        SEEN.lock().unwrap().push((x.data_ptr(), o.data_ptr()));
        drop((x, o));
        Ok((candle_core::CudaStorage::wrap_cuda_slice(output, dev.clone()), Shape::from((rows, cols))))
    }
}

/// Leaky ReLU in place on f16 (contiguous layouts).
struct LeakyRelu;

impl InplaceOp1 for LeakyRelu {
    fn name(&self) -> &'static str {
        "kernel-rs-leaky-relu"
    }

    fn cpu_fwd(&self, storage: &mut CpuStorage, layout: &Layout) -> candle_core::Result<()> {
        let CpuStorage::F16(data) = storage else { candle_core::bail!("leaky_relu: f16 only") };
        let (start, end) = layout.contiguous_offsets().ok_or_else(|| candle_core::Error::Msg("leaky_relu: contiguous only".into()))?;
        // SAFETY: candle lends `data` mutably for the call; the view is dropped before return.
        let x = unsafe { Tensor::from_host_slice(&mut data[start..end], &[end - start], None) }.map_err(wrap)?;
        leaky_relu_inplace(&x).map_err(wrap)
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(&self, storage: &mut candle_core::CudaStorage, layout: &Layout) -> candle_core::Result<()> {
        use kernel_runtime::with_stream;
        let (start, end) = layout.contiguous_offsets().ok_or_else(|| candle_core::Error::Msg("leaky_relu: contiguous only".into()))?;
        let stream = storage.device.cuda_stream();
        let slice = storage.as_cuda_slice_mut::<f16>()?;
        // SAFETY: candle lends the storage mutably for the call and orders its later work on
        // its stream, where the kernel runs.
        let x = unsafe { Tensor::from_cuda_view_mut(&mut slice.slice_mut(start..end), &[end - start], None) }.map_err(wrap)?;
        let s = x.device().wrap_stream(&stream).map_err(wrap)?;
        with_stream(&s, || leaky_relu_inplace(&x)).map_err(wrap)
    }
}

/// The address of the first element of candle tensor `t` (of `f32` or `f16`).
fn candle_ptr(t: &candle_core::Tensor) -> anyhow::Result<u64> {
    let (storage, layout) = t.storage_and_layout();
    let elem = t.dtype().size_in_bytes() as u64;
    let base = match &*storage {
        Storage::Cpu(CpuStorage::F32(v)) => v.as_ptr() as u64,
        Storage::Cpu(CpuStorage::F16(v)) => v.as_ptr() as u64,
        #[cfg(feature = "cuda")]
        Storage::Cuda(c) => {
            use candle_core::cuda_backend::cudarc::driver::DevicePtr;
            let stream = c.device.cuda_stream();
            match t.dtype() {
                DType::F16 => c.as_cuda_slice::<f16>()?.device_ptr(&stream).0,
                _ => c.as_cuda_slice::<f32>()?.device_ptr(&stream).0,
            }
        }
        s => anyhow::bail!("unexpected storage {:?}", s.device()),
    };
    Ok(base + layout.start_offset() as u64 * elem)
}

/// Softmax of each row, in float64.
fn softmax_ref(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for r in x.chunks(cols).take(rows) {
        let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = r.iter().map(|v| (v - m).exp()).sum();
        out.extend(r.iter().map(|v| (v - m).exp() / s));
    }
    out
}

fn main() -> anyhow::Result<()> {
    let device = candle_core::Device::cuda_if_available(0)?;
    println!("candle device: {device:?}");
    let mut passed = 0;
    let mut check = |name: &str, ok: bool, detail: String| -> anyhow::Result<()> {
        anyhow::ensure!(ok, "FAIL {name}: {detail}");
        println!("ok   {name}");
        passed += 1;
        Ok(())
    };

    let x = candle_core::Tensor::randn(0f32, 3.0, (300, 700), &device)?;
    for (what, v) in [("contiguous", x.clone()), ("row-narrowed", x.narrow(0, 17, 200)?), ("transposed", x.narrow(1, 0, 256)?.t()?)] {
        SEEN.lock().unwrap().clear();
        let y = v.apply_op1(Softmax)?;
        let (rows, cols) = v.dims2()?;
        let got: Vec<f64> = y.to_dtype(DType::F64)?.flatten_all()?.to_vec1()?;
        let want = softmax_ref(&v.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?, rows, cols);
        let err = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        check(&format!("softmax of a {what} {rows}x{cols} tensor matches float64"), err < 1e-6, format!("max error {err:e}"))?;
        let (input, output) = SEEN.lock().unwrap()[0];
        check(&format!("softmax ({what}) read candle's input and wrote candle's output in place"), input == candle_ptr(&v)? && output == candle_ptr(&y)?, format!("{input:#x} {output:#x}"))?;
    }

    let h = (candle_core::Tensor::randn(0f32, 4.0, (64, 129), &device)?).to_dtype(DType::F16)?;
    let before: Vec<f32> = h.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let ptr = candle_ptr(&h)?;
    h.inplace_op1(&LeakyRelu)?;
    let after: Vec<f32> = h.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let ok = before.iter().zip(&after).all(|(&b, &a)| {
        let want = f16::from_f64(if b >= 0.0 { f64::from(b) } else { 0.01 * f64::from(b) }).to_f32();
        (a - want).abs() <= 1e-3 * want.abs().max(1.0)
    });
    check("in-place leaky_relu on candle's f16 storage matches float64", ok, String::new())?;
    check("leaky_relu kept candle's memory", candle_ptr(&h)? == ptr, String::new())?;
    println!("{passed} passed, 0 failed");
    Ok(())
}
