//! Vendor-library baselines to compare kernels against (host only): an f16
//! matrix multiplication through cuBLAS (`cublasGemmEx`, f16 inputs and
//! output, f32 accumulation), the "cuBLAS" line of the seeds' benchmark.
//!
//! cuBLAS is loaded at run time by cudarc. Its loader panics when the library
//! is missing, so [`cublas_available`] checks first and every entry point
//! returns [`BaselineError::CublasUnavailable`] instead. When the loader cannot
//! find `libcublas.so.13` by name, the directory in `KERNEL_CUBLAS_DIR`, then
//! `/usr/local/cuda/lib64`, `/usr/local/cuda/targets/x86_64-linux/lib` and
//! `/usr/local/cuda-*/targets/x86_64-linux/lib` are tried (`libcublasLt` first,
//! then `libcublas`), so a CUDA toolkit outside `LD_LIBRARY_PATH` still works.
//!
//! ```
//! use kernel_runtime::baseline::{cublas_available, cublas_matmul_f16, BaselineError};
//! use kernel_runtime::{f16, Device, Tensor};
//! let dev = Device::best();
//! let a = Tensor::<f16>::randn(&dev, &[64, 32], 0).unwrap();
//! let b = Tensor::<f16>::randn(&dev, &[32, 16], 1).unwrap();
//! let c = Tensor::<f16>::zeros(&dev, &[64, 16]).unwrap();
//! match cublas_matmul_f16(&a, &b, &c) {
//!     Ok(()) => println!("cuBLAS: {:?}", &c.to_vec()[..4]),
//!     Err(BaselineError::NotOnGpu { .. }) => assert!(dev.is_cpu()),
//!     Err(BaselineError::CublasUnavailable { reason }) => println!("no cuBLAS: {reason}"),
//!     Err(e) => panic!("{e}"),
//! }
//! ```

use std::collections::HashMap;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use cudarc::cublas::{result as blas, sys as blas_sys, CudaBlas};

use crate::cuda::{panic_text, CudaDevice};
use crate::error::DeviceError;
use crate::tensor::Tensor;
use crate::f16;

/// Why a baseline could not run.
///
/// ```
/// use kernel_runtime::baseline::BaselineError;
/// let e = BaselineError::Shape { reason: "a is 2x3 but b is 4x5".into() };
/// assert_eq!(e.to_string(), "invalid matmul shapes: a is 2x3 but b is 4x5");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// The cuBLAS library cannot be loaded.
    #[error("cuBLAS is not available: {reason}")]
    CublasUnavailable {
        /// What was tried and what to do.
        reason: String,
    },
    /// A tensor is not on a CUDA device (cuBLAS runs only on GPUs).
    #[error("argument `{arg}` is on {device}: cuBLAS needs tensors on a CUDA device")]
    NotOnGpu {
        /// The argument.
        arg: &'static str,
        /// Its device.
        device: String,
    },
    /// The shapes do not form a matrix product.
    #[error("invalid matmul shapes: {reason}")]
    Shape {
        /// What is wrong.
        reason: String,
    },
    /// A tensor's strides are not a layout cuBLAS reads (rows or columns must be contiguous).
    #[error("argument `{arg}` has strides {strides:?}, which cuBLAS cannot read: {reason}")]
    Layout {
        /// The argument.
        arg: &'static str,
        /// Its strides.
        strides: Vec<usize>,
        /// What is needed.
        reason: String,
    },
    /// A cuBLAS call failed.
    #[error("{op} failed: {status}")]
    Cublas {
        /// The call.
        op: String,
        /// The cuBLAS status (e.g. `CUBLAS_STATUS_NOT_SUPPORTED`).
        status: String,
    },
    /// The device failed.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Directories tried for `libcublas` when the dynamic loader does not find it by name.
fn cublas_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = crate::Settings::current().cublas_dir.iter().cloned().collect();
    dirs.push("/usr/local/cuda/lib64".into());
    dirs.push("/usr/local/cuda/targets/x86_64-linux/lib".into());
    if let Ok(entries) = std::fs::read_dir("/usr/local") {
        let mut versions: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("cuda-"))
            .map(|e| e.path().join("targets/x86_64-linux/lib"))
            .collect();
        versions.sort();
        dirs.extend(versions.into_iter().rev());
    }
    dirs
}

/// Loads `libcublasLt` and `libcublas` from the first directory of [`cublas_dirs`] that
/// has them, and keeps them loaded: a later `dlopen("libcublas.so.13")` (cudarc's) then
/// finds the loaded library by its soname. Returns the directory used.
fn preload_cublas() -> Option<PathBuf> {
    for dir in cublas_dirs() {
        for major in ["13", "12"] {
            let lt = dir.join(format!("libcublasLt.so.{major}"));
            let blas = dir.join(format!("libcublas.so.{major}"));
            if !blas.is_file() {
                continue;
            }
            // SAFETY: loading the CUDA libraries runs their initializers, which have no
            // preconditions; the handles are leaked so the libraries stay loaded.
            unsafe {
                if lt.is_file() {
                    if let Ok(l) = libloading::Library::new(&lt) {
                        std::mem::forget(l);
                    }
                }
                if let Ok(l) = libloading::Library::new(&blas) {
                    std::mem::forget(l);
                    return Some(dir);
                }
            }
        }
    }
    None
}

/// The names cuBLAS is looked for by (the versions cudarc's `cuda-13000` binding loads).
const CUBLAS_NAMES: &[&str] = &["libcublas.so.13", "libcublas.so"];

/// Whether cuBLAS can be loaded (checked once per process).
///
/// # Errors
/// [`BaselineError::CublasUnavailable`] naming the library names and directories tried.
///
/// ```
/// use kernel_runtime::baseline::cublas_available;
/// if let Err(e) = cublas_available() {
///     assert!(e.to_string().starts_with("cuBLAS is not available: "));
/// }
/// ```
pub fn cublas_available() -> Result<(), BaselineError> {
    static AVAILABLE: OnceLock<Result<(), BaselineError>> = OnceLock::new();
    AVAILABLE
        .get_or_init(|| {
            let present = || crate::cuda::loadable(CUBLAS_NAMES).is_some();
            if present() || (preload_cublas().is_some() && present()) {
                return Ok(());
            }
            let dirs: Vec<String> = cublas_dirs().iter().map(|d| d.display().to_string()).collect();
            Err(BaselineError::CublasUnavailable {
                reason: format!(
                    "the dynamic loader found none of {}, nor did {}; \
                     add the directory of libcublas.so.13 to LD_LIBRARY_PATH or set KERNEL_CUBLAS_DIR",
                    CUBLAS_NAMES.join(", "),
                    dirs.join(", ")
                ),
            })
        })
        .clone()
}

/// The cuBLAS handle of a device (on its stream), created on first use.
fn handle(dev: &Arc<CudaDevice>) -> Result<Arc<Mutex<CudaBlas>>, BaselineError> {
    static HANDLES: Mutex<Option<HashMap<usize, Arc<Mutex<CudaBlas>>>>> = Mutex::new(None);
    cublas_available()?;
    let mut handles = HANDLES.lock().unwrap_or_else(PoisonError::into_inner);
    let map = handles.get_or_insert_with(HashMap::new);
    if let Some(h) = map.get(&dev.ordinal) {
        return Ok(Arc::clone(h));
    }
    let stream = Arc::clone(&dev.stream);
    dev.call("binding the context (cuCtxSetCurrent)", || Ok(()))?;
    let created = catch_unwind(AssertUnwindSafe(|| {
        CudaBlas::new(stream).map_err(|e| BaselineError::Cublas { op: "cublasCreate".into(), status: format!("{:?}", e.0) })
    }));
    let blas = match created {
        Ok(r) => r?,
        Err(p) => return Err(BaselineError::CublasUnavailable { reason: format!("cudarc panicked: {}", panic_text(&*p)) }),
    };
    let h = Arc::new(Mutex::new(blas));
    map.insert(dev.ordinal, Arc::clone(&h));
    Ok(h)
}

/// `(rows, cols)` of a 2-D tensor.
fn dims(t: &Tensor<f16>, arg: &'static str) -> Result<(usize, usize), BaselineError> {
    match t.shape() {
        [r, c] => Ok((*r, *c)),
        s => Err(BaselineError::Shape { reason: format!("`{arg}` must be 2-D, found shape {s:?}") }),
    }
}

/// How cuBLAS (column-major) reads the transpose `Xᵀ` of row-major-indexed `x`:
/// `(transpose?, leading dimension)`. Rows contiguous: `Xᵀ` is the memory as is (no
/// transpose, ld = row stride). Columns contiguous: the memory is `X` (transpose it,
/// ld = column stride).
pub(crate) fn layout(shape: (usize, usize), strides: (usize, usize)) -> Option<(bool, usize)> {
    let (r, c) = shape;
    let (s0, s1) = strides;
    if c <= 1 || s1 == 1 {
        let ld = if r <= 1 { c.max(1) } else { s0 };
        if ld >= c.max(1) {
            return Some((false, ld));
        }
    }
    if r <= 1 || s0 == 1 {
        let ld = if c <= 1 { r.max(1) } else { s1 };
        if ld >= r.max(1) {
            return Some((true, ld));
        }
    }
    None
}

/// The device address of a tensor's first element, or `NotOnGpu`.
fn device_ptr(t: &Tensor<f16>, arg: &'static str) -> Result<u64, BaselineError> {
    t.device_addr().ok_or_else(|| BaselineError::NotOnGpu { arg, device: t.device().to_string() })
}

/// `c = a @ b` for f16 matrices on one GPU, by `cublasGemmEx` (f16 in and out, f32
/// accumulation, default algorithm), queued on the device's stream like kernel launches.
/// `a` is (M, K), `b` is (K, N), `c` is (M, N); each may be row-major or column-major
/// with any leading dimension (transposed views work); `c` must have contiguous rows.
/// Row-major results come from the usual trick: cuBLAS computes `cᵀ = bᵀ aᵀ` in
/// column-major order, which is `c` in row-major order.
///
/// # Errors
/// [`BaselineError::CublasUnavailable`] without cuBLAS, [`BaselineError::NotOnGpu`] for
/// CPU tensors or tensors on different GPUs, [`BaselineError::Shape`] /
/// [`BaselineError::Layout`] for bad arguments, [`BaselineError::Cublas`] when the call fails.
///
/// ```no_run
/// use kernel_runtime::baseline::cublas_matmul_f16;
/// use kernel_runtime::{f16, Device, Tensor};
/// let gpu = Device::cuda(0).unwrap();
/// let a = Tensor::<f16>::randn(&gpu, &[4096, 4096], 0).unwrap();
/// let c = Tensor::<f16>::zeros(&gpu, &[4096, 4096]).unwrap();
/// cublas_matmul_f16(&a, &a, &c).unwrap();
/// ```
pub fn cublas_matmul_f16(a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) -> Result<(), BaselineError> {
    let (m, k) = dims(a, "a")?;
    let (kb, n) = dims(b, "b")?;
    gemm(Gemm { a: (a, a.stride(0), a.stride(1), 0), b: (b, b.stride(0), b.stride(1), 0), c: (c, c.stride(0), c.stride(1), 0), m, n, k, kb, batch: 1, c_shape: vec![m, n] })
}

/// `c[i] = a[i] @ b[i]` for batches of f16 matrices on one GPU, by
/// `cublasGemmStridedBatchedEx` (f16 in and out, f32 accumulation, default algorithm): `a` is
/// (batch, M, K), `b` is (batch, K, N), `c` is (batch, M, N), each batch entry laid out as in
/// [`cublas_matmul_f16`] and the entries a constant stride apart.
///
/// # Errors
/// As [`cublas_matmul_f16`].
pub fn cublas_bmm_f16(a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) -> Result<(), BaselineError> {
    let dims3 = |t: &Tensor<f16>, arg: &'static str| match t.shape() {
        [n, r, c] => Ok((*n, *r, *c)),
        s => Err(BaselineError::Shape { reason: format!("`{arg}` must be 3-D, found shape {s:?}") }),
    };
    let (batch, m, k) = dims3(a, "a")?;
    let (bb, kb, n) = dims3(b, "b")?;
    if bb != batch {
        return Err(BaselineError::Shape { reason: format!("a has {batch} batch entries but b has {bb}") });
    }
    fn v(t: &Tensor<f16>) -> (&Tensor<f16>, usize, usize, usize) {
        (t, t.stride(1), t.stride(2), t.stride(0))
    }
    gemm(Gemm { a: v(a), b: v(b), c: v(c), m, n, k, kb, batch, c_shape: vec![batch, m, n] })
}

/// One (batched) product for [`gemm`]: each operand with its row, column and batch strides.
struct Gemm<'a> {
    a: (&'a Tensor<f16>, usize, usize, usize),
    b: (&'a Tensor<f16>, usize, usize, usize),
    c: (&'a Tensor<f16>, usize, usize, usize),
    m: usize,
    n: usize,
    k: usize,
    kb: usize,
    batch: usize,
    c_shape: Vec<usize>,
}

/// The checks and the cuBLAS call of [`cublas_matmul_f16`] and [`cublas_bmm_f16`].
fn gemm(g: Gemm<'_>) -> Result<(), BaselineError> {
    let Gemm { a: (a, ..), b: (b, ..), c: (c, ..), m, n, k, kb, batch, .. } = g;
    if k != kb {
        return Err(BaselineError::Shape { reason: format!("a is {m}x{k} but b is {kb}x{n}") });
    }
    if c.shape() != g.c_shape.as_slice() {
        return Err(BaselineError::Shape { reason: format!("c has shape {:?}, expected {:?}", c.shape(), g.c_shape) });
    }
    let Some(dev) = a.device().cuda_device() else {
        return Err(BaselineError::NotOnGpu { arg: "a", device: a.device().to_string() });
    };
    for (t, arg) in [(b, "b"), (c, "c")] {
        if t.device() != a.device() {
            return Err(BaselineError::NotOnGpu { arg, device: format!("{} (a is on {})", t.device(), a.device()) });
        }
    }
    let too_big = |v: usize| i32::try_from(v).is_err();
    if [m, n, k, batch].into_iter().any(too_big) {
        return Err(BaselineError::Shape { reason: format!("dimensions {batch}x{m}x{n}x{k} exceed i32") });
    }
    let lay = |(t, s0, s1, _): (&Tensor<f16>, usize, usize, usize), arg: &'static str, shape: (usize, usize)| {
        layout(shape, (s0, s1))
            .filter(|&(_, ld)| !too_big(ld))
            .ok_or_else(|| BaselineError::Layout { arg, strides: t.strides().to_vec(), reason: "rows or columns must be contiguous".into() })
    };
    let (ta, lda) = lay(g.a, "a", (m, k))?;
    let (tb, ldb) = lay(g.b, "b", (k, n))?;
    let (tc, ldc) = lay(g.c, "c", (m, n))?;
    if tc {
        return Err(BaselineError::Layout { arg: "c", strides: c.strides().to_vec(), reason: "the output needs contiguous rows".into() });
    }
    let (pa, pb, pc) = (device_ptr(a, "a")?, device_ptr(b, "b")?, device_ptr(c, "c")?);
    if m == 0 || n == 0 || batch == 0 {
        return Ok(());
    }
    let h = handle(dev)?;
    let blas = h.lock().unwrap_or_else(PoisonError::into_inner);
    let op = |t: bool| if t { blas_sys::cublasOperation_t::CUBLAS_OP_T } else { blas_sys::cublasOperation_t::CUBLAS_OP_N };
    let (alpha, beta) = (1.0f32, 0.0f32);
    let f16_type = blas_sys::cudaDataType_t::CUDA_R_16F;
    let (sa, sb, sc) = (g.a.3 as i64, g.b.3 as i64, g.c.3 as i64);
    dev.call("binding the context (cuCtxSetCurrent)", || Ok(()))?;
    let called = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the pointers are the first elements of live allocations of this device,
        // and (m, n, k, ld*, batch strides) describe views inside them (checked by `layout`
        // against the tensors' shapes and strides); alpha and beta outlive the call.
        unsafe {
            let (cm, cn, ck, alpha, beta) = (n as i32, m as i32, k as i32, std::ptr::from_ref(&alpha).cast::<c_void>(), std::ptr::from_ref(&beta).cast::<c_void>());
            let (pa, pb, pc) = (pa as *const c_void, pb as *const c_void, pc as *mut c_void);
            let (compute, algo) = (blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT);
            // One product through `cublasGemmEx` (what the seeds' benchmark has always timed).
            if batch == 1 {
                blas::gemm_ex(*blas.handle(), op(tb), op(ta), cm, cn, ck, alpha, pb, f16_type, ldb as i32, pa, f16_type, lda as i32, beta, pc, f16_type, ldc as i32, compute, algo)
            } else {
                blas::gemm_strided_batched_ex(
                    *blas.handle(), op(tb), op(ta), cm, cn, ck, alpha, pb, f16_type, ldb as i32, sb, pa, f16_type, lda as i32, sa, beta, pc, f16_type, ldc as i32, sc, batch as i32, compute, algo,
                )
            }
        }
        .map_err(|e| BaselineError::Cublas { op: format!("cublasGemm{}Ex ({batch}x{m}x{n}x{k}, f16, f32 accumulation)", if batch == 1 { "" } else { "StridedBatched" }), status: format!("{:?}", e.0) })
    }));
    match called {
        Ok(r) => r,
        Err(p) => Err(BaselineError::CublasUnavailable { reason: format!("cudarc panicked: {}", panic_text(&*p)) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn layouts_for_the_transpose_trick() {
        // Row-major 4x3: Xᵀ is the memory as is, ld 3.
        assert_eq!(layout((4, 3), (3, 1)), Some((false, 3)));
        // Padded rows.
        assert_eq!(layout((4, 3), (8, 1)), Some((false, 8)));
        // Column-major 4x3 (a transposed view): transpose, ld 4.
        assert_eq!(layout((4, 3), (1, 4)), Some((true, 4)));
        // Vectors and single rows have free strides.
        assert_eq!(layout((1, 5), (0, 1)), Some((false, 5)));
        assert_eq!(layout((5, 1), (1, 0)), Some((false, 1)));
        // Neither rows nor columns contiguous, or overlapping rows.
        assert_eq!(layout((4, 3), (6, 2)), None);
        assert_eq!(layout((4, 3), (2, 1)), None);
    }

    #[test]
    fn cpu_tensors_and_bad_shapes_are_typed_errors() {
        let dev = Device::cpu();
        let a = Tensor::<f16>::zeros(&dev, &[4, 3]).unwrap();
        let b = Tensor::<f16>::zeros(&dev, &[3, 2]).unwrap();
        let c = Tensor::<f16>::zeros(&dev, &[4, 2]).unwrap();
        assert!(matches!(cublas_matmul_f16(&a, &b, &c), Err(BaselineError::NotOnGpu { arg: "a", .. })));
        let err = cublas_matmul_f16(&a, &a, &c).unwrap_err();
        assert_eq!(err.to_string(), "invalid matmul shapes: a is 4x3 but b is 4x3");
        let err = cublas_matmul_f16(&a, &b, &a).unwrap_err();
        assert!(matches!(err, BaselineError::Shape { .. }), "{err}");
    }

    #[test]
    fn availability_is_a_result_not_a_panic() {
        match cublas_available() {
            Ok(()) => println!("note: cuBLAS is available on this machine"),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("LD_LIBRARY_PATH") && msg.contains("KERNEL_CUBLAS_DIR"), "{msg}");
            }
        }
    }
}
