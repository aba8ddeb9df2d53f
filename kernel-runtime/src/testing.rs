//! Test and benchmark helpers (Triton's `triton.testing`): [`allclose`],
//! [`assert_close`], [`matmul_ref_f64`], [`do_bench`] (wall clock) and
//! [`do_bench_gpu`] (CUDA events, L2 flushed, Triton's warm-up/repetition budgets), and
//! [`do_bench_gpu_interleaved`] (the same for several functions, their calls interleaved);
//! [`with_forced_split`] makes the launches in it split their K loops whatever the waves.
//!
//! ```
//! use kernel_runtime::testing::{assert_close, matmul_ref_f64};
//! use kernel_runtime::{f16, Device, Tensor};
//! let c = Tensor::from_vec(&Device::cpu(), &[1, 1], vec![f16::from_f32(11.0)]).unwrap();
//! let expected = matmul_ref_f64(&[1.0, 2.0], &[3.0, 4.0], 1, 1, 2);
//! assert_close(&c, &expected).unwrap();
//! ```

use std::fmt;
use std::hint::black_box;
use std::time::Instant;

use crate::device::Device;
use crate::dtype::{DType, DTypeKind};
use crate::error::DeviceError;
use crate::tensor::Tensor;

pub use crate::split::with_forced_split;

/// Absolute and relative tolerance: `|actual - expected| <= atol + rtol * |expected|`.
///
/// ```
/// use kernel_runtime::testing::Tolerance;
/// use kernel_runtime::DTypeKind;
/// assert_eq!(Tolerance::for_dtype(DTypeKind::F16), Tolerance { atol: 1e-2, rtol: 1e-2 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (a fraction of `|expected|`).
    pub rtol: f64,
}

impl Tolerance {
    /// The default tolerance for results stored as `dtype`: `f16` 1e-2/1e-2,
    /// `bf16` 5e-2/2e-2, `f32` 1e-4/1e-4, `f64` 1e-10/1e-10, integers and
    /// `bool` exact.
    ///
    /// ```
    /// use kernel_runtime::testing::Tolerance;
    /// use kernel_runtime::DTypeKind;
    /// assert_eq!(Tolerance::for_dtype(DTypeKind::I32).atol, 0.0);
    /// ```
    pub fn for_dtype(dtype: DTypeKind) -> Self {
        let (atol, rtol) = match dtype {
            DTypeKind::F16 => (1e-2, 1e-2),
            DTypeKind::BF16 => (5e-2, 2e-2),
            DTypeKind::F32 => (1e-4, 1e-4),
            DTypeKind::F64 => (1e-10, 1e-10),
            _ => (0.0, 0.0),
        };
        Tolerance { atol, rtol }
    }
}

/// Whether one pair of values is close: NaN matches NaN, an infinity matches
/// only the same infinity, otherwise `|a - e| <= atol + rtol * |e|` (the test of
/// [`assert_close_with`] for each element).
///
/// ```
/// use kernel_runtime::testing::is_close;
/// assert!(is_close(1.005, 1.0, 1e-2, 0.0) && !is_close(1.02, 1.0, 1e-2, 0.0));
/// assert!(is_close(f64::NAN, f64::NAN, 0.0, 0.0) && !is_close(f64::INFINITY, 1e300, 1.0, 1.0));
/// ```
pub fn is_close(a: f64, e: f64, atol: f64, rtol: f64) -> bool {
    if a.is_nan() || e.is_nan() {
        return a.is_nan() && e.is_nan();
    }
    if a.is_infinite() || e.is_infinite() {
        return a == e;
    }
    (a - e).abs() <= atol + rtol * e.abs()
}

/// Whether `actual` and `expected` have the same length and every pair is
/// within `atol + rtol * |expected|` (NaN positions must match, infinities
/// must match in sign).
///
/// ```
/// use kernel_runtime::testing::allclose;
/// assert!(allclose(&[1.0, f64::NAN], &[1.001, f64::NAN], 1e-2, 0.0));
/// assert!(!allclose(&[1.0], &[1.1], 1e-2, 1e-2));
/// assert!(!allclose(&[f64::INFINITY], &[f64::NEG_INFINITY], 1.0, 1.0));
/// ```
pub fn allclose(actual: &[f64], expected: &[f64], atol: f64, rtol: f64) -> bool {
    actual.len() == expected.len()
        && actual.iter().zip(expected).all(|(&a, &e)| is_close(a, e, atol, rtol))
}

/// Why [`assert_close`] failed, with a readable report.
///
/// ```
/// use kernel_runtime::testing::{assert_close, CloseError};
/// use kernel_runtime::{Device, Tensor};
/// let t = Tensor::from_vec(&Device::cpu(), &[2], vec![1.0f32, 2.0]).unwrap();
/// let err = assert_close(&t, &[1.0, 2.5]).unwrap_err();
/// assert!(matches!(err, CloseError::NotClose { mismatches: 1, .. }));
/// println!("{err}");
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum CloseError {
    /// The element counts differ.
    LengthMismatch {
        /// Elements in the tensor.
        actual: usize,
        /// Elements expected.
        expected: usize,
    },
    /// Some elements are outside the tolerance.
    NotClose {
        /// How many elements are outside the tolerance.
        mismatches: usize,
        /// Elements compared.
        total: usize,
        /// The worst element's absolute error (`inf` for NaN/infinity mismatches).
        max_abs_err: f64,
        /// The worst element's index (one entry per dimension).
        index: Vec<usize>,
        /// The worst element's value.
        actual: f64,
        /// The value expected there.
        expected: f64,
        /// The tolerance used.
        tol: Tolerance,
    },
}

impl fmt::Display for CloseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseError::LengthMismatch { actual, expected } => {
                write!(f, "length mismatch: the tensor has {actual} elements, {expected} were expected")
            }
            CloseError::NotClose { mismatches, total, max_abs_err, index, actual, expected, tol } => {
                write!(
                    f,
                    "not close: {mismatches} of {total} elements differ (atol {}, rtol {}); \
                     largest error {max_abs_err:e} at index {index:?}: actual {actual}, expected {expected}",
                    tol.atol, tol.rtol
                )
            }
        }
    }
}

impl std::error::Error for CloseError {}

/// Checks `actual` against `expected` (logical row-major order) with the
/// default tolerance of `T` ([`Tolerance::for_dtype`]).
///
/// # Errors
/// [`CloseError`] describing the mismatch: how many elements, the worst one
/// and where.
///
/// ```
/// use kernel_runtime::testing::assert_close;
/// use kernel_runtime::{f16, Device, Tensor};
/// let t = Tensor::full(&Device::cpu(), &[2, 2], f16::from_f32(0.1)).unwrap();
/// assert_close(&t, &[0.1; 4]).unwrap();
/// let err = assert_close(&t, &[0.1, 0.1, 0.1, 0.2]).unwrap_err();
/// assert!(err.to_string().contains("1 of 4 elements differ"));
/// assert!(err.to_string().contains("at index [1, 1]"));
/// ```
pub fn assert_close<T: DType>(actual: &Tensor<T>, expected: &[f64]) -> Result<(), CloseError> {
    assert_close_with(actual, expected, Tolerance::for_dtype(T::KIND))
}

/// [`assert_close`] with an explicit tolerance.
///
/// # Errors
/// As [`assert_close`].
///
/// ```
/// use kernel_runtime::testing::{assert_close_with, Tolerance};
/// use kernel_runtime::{Device, Tensor};
/// let t = Tensor::from_vec(&Device::cpu(), &[1], vec![1.05f32]).unwrap();
/// assert!(assert_close_with(&t, &[1.0], Tolerance { atol: 0.1, rtol: 0.0 }).is_ok());
/// ```
pub fn assert_close_with<T: DType>(
    actual: &Tensor<T>,
    expected: &[f64],
    tol: Tolerance,
) -> Result<(), CloseError> {
    let values = actual.to_f64_vec();
    if values.len() != expected.len() {
        return Err(CloseError::LengthMismatch { actual: values.len(), expected: expected.len() });
    }
    let mut mismatches = 0usize;
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&a, &e)) in values.iter().zip(expected).enumerate() {
        if is_close(a, e, tol.atol, tol.rtol) {
            continue;
        }
        mismatches += 1;
        let err = if (a - e).is_finite() { (a - e).abs() } else { f64::INFINITY };
        if worst.is_none_or(|(_, w)| err > w) {
            worst = Some((i, err));
        }
    }
    match worst {
        None => Ok(()),
        Some((flat, max_abs_err)) => Err(CloseError::NotClose {
            mismatches,
            total: values.len(),
            max_abs_err,
            index: unravel(flat, actual.shape()),
            actual: values[flat],
            expected: expected[flat],
            tol,
        }),
    }
}

/// The multi-index of row-major position `flat` in `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &n) in index.iter_mut().zip(shape).rev() {
        if n > 0 {
            *i = flat % n;
            flat /= n;
        }
    }
    index
}

/// `a @ b` in f64 for row-major `a: [m, k]` and `b: [k, n]` (the reference
/// for matmul tests).
///
/// # Panics
/// When `a.len() != m * k` or `b.len() != k * n`.
///
/// ```
/// use kernel_runtime::testing::matmul_ref_f64;
/// let c = matmul_ref_f64(&[1.0, 2.0, 3.0, 4.0], &[1.0, 0.0, 0.0, 1.0], 2, 2, 2);
/// assert_eq!(c, vec![1.0, 2.0, 3.0, 4.0]);
/// ```
pub fn matmul_ref_f64(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    assert_eq!(a.len(), m * k, "matmul_ref_f64: `a` must have m * k = {} elements", m * k);
    assert_eq!(b.len(), k * n, "matmul_ref_f64: `b` must have k * n = {} elements", k * n);
    let mut c = vec![0.0f64; m * n];
    if n == 0 || k == 0 {
        return c;
    }
    for (c_row, a_row) in c.chunks_exact_mut(n).zip(a.chunks_exact(k)) {
        for (&aik, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            for (cv, &bv) in c_row.iter_mut().zip(b_row) {
                *cv += aik * bv;
            }
        }
    }
    c
}

/// Timings of [`do_bench`] / [`do_bench_gpu`], in milliseconds per call.
///
/// ```
/// use kernel_runtime::testing::BenchResult;
/// let r = BenchResult::from_samples(&mut [3.0, 1.0, 2.0]);
/// assert_eq!((r.median_ms, r.min_ms, r.max_ms, r.mean_ms, r.reps), (2.0, 1.0, 3.0, 2.0, 3));
/// assert_eq!(r.tflops(2e9), 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchResult {
    /// Median time of one call.
    pub median_ms: f64,
    /// Fastest call.
    pub min_ms: f64,
    /// Slowest call.
    pub max_ms: f64,
    /// Mean time of one call.
    pub mean_ms: f64,
    /// 20th percentile (linear interpolation, as `torch.quantile`).
    pub p20_ms: f64,
    /// 80th percentile.
    pub p80_ms: f64,
    /// Number of timed calls.
    pub reps: usize,
}

impl BenchResult {
    /// Statistics of per-call times (sorted in place; at least one sample).
    ///
    /// # Panics
    /// When `samples` is empty.
    ///
    /// ```
    /// use kernel_runtime::testing::BenchResult;
    /// let r = BenchResult::from_samples(&mut [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// assert_eq!(r.median_ms, 3.5);
    /// assert!((r.p20_ms - 2.0).abs() < 1e-12 && (r.p80_ms - 5.0).abs() < 1e-12);
    /// ```
    pub fn from_samples(samples: &mut [f64]) -> Self {
        assert!(!samples.is_empty(), "BenchResult::from_samples: no samples");
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        BenchResult {
            median_ms: quantile(samples, 0.5),
            min_ms: samples[0],
            max_ms: samples[n - 1],
            mean_ms: samples.iter().sum::<f64>() / n as f64,
            p20_ms: quantile(samples, 0.2),
            p80_ms: quantile(samples, 0.8),
            reps: n,
        }
    }

    /// Throughput in TFLOP/s for `flops` floating-point operations per call,
    /// from the median time.
    ///
    /// ```
    /// use kernel_runtime::testing::BenchResult;
    /// let r = BenchResult::from_samples(&mut [1.0]);
    /// assert_eq!(r.tflops(1e9), 1.0);
    /// ```
    pub fn tflops(&self, flops: f64) -> f64 {
        flops / (self.median_ms * 1e-3) / 1e12
    }
}

/// The `q` quantile of sorted `v`, linearly interpolated.
fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Times `f`: `warmup` untimed calls, then `reps` timed calls (at least one),
/// by the wall clock. Results are passed through [`black_box`] so the work is
/// not optimized away. For GPU work use [`do_bench_gpu`], which times on the
/// device.
///
/// ```
/// use kernel_runtime::testing::do_bench;
/// let r = do_bench(|| (0..1000u64).sum::<u64>(), 2, 5);
/// assert!(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms);
/// ```
pub fn do_bench<R>(mut f: impl FnMut() -> R, warmup: usize, reps: usize) -> BenchResult {
    for _ in 0..warmup {
        black_box(f());
    }
    let mut times: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let start = Instant::now();
            black_box(f());
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    BenchResult::from_samples(&mut times)
}

/// How [`do_bench_gpu`] measures (Triton's `do_bench(fn, warmup, rep)`).
///
/// ```
/// use kernel_runtime::testing::BenchOptions;
/// let o = BenchOptions::default();
/// assert_eq!((o.warmup_ms, o.rep_ms, o.flush_l2), (25.0, 100.0, true));
/// let quick = BenchOptions { rep_ms: 20.0, ..BenchOptions::default() };
/// assert_eq!(quick.rep_ms, 20.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchOptions {
    /// Time to spend on untimed warm-up calls, in milliseconds.
    pub warmup_ms: f64,
    /// Time to spend on timed calls, in milliseconds.
    pub rep_ms: f64,
    /// Flush the L2 cache before every timed call by writing a 256 MiB buffer (GPU only).
    pub flush_l2: bool,
    /// Upper bound on the timed calls (and on the warm-up calls).
    pub max_reps: usize,
}

impl Default for BenchOptions {
    /// Triton's defaults: 25 ms of warm-up, 100 ms of repetitions, L2 flushed.
    fn default() -> Self {
        BenchOptions { warmup_ms: 25.0, rep_ms: 100.0, flush_l2: true, max_reps: 10_000 }
    }
}

impl BenchOptions {
    /// Warm-up and repetition counts for calls that take `estimate_ms`: `warmup_ms /
    /// estimate` and `rep_ms / estimate`, each at least 1 and at most `max_reps`.
    ///
    /// ```
    /// use kernel_runtime::testing::BenchOptions;
    /// assert_eq!(BenchOptions::default().counts(0.5), (50, 200));
    /// assert_eq!(BenchOptions::default().counts(500.0), (1, 1));
    /// assert_eq!(BenchOptions::default().counts(0.0), (10_000, 10_000));
    /// ```
    pub fn counts(&self, estimate_ms: f64) -> (usize, usize) {
        let max = self.max_reps.max(1);
        let n = |budget: f64| {
            if estimate_ms > 0.0 {
                ((budget / estimate_ms) as usize).clamp(1, max)
            } else {
                max
            }
        };
        (n(self.warmup_ms), n(self.rep_ms))
    }
}

/// Bytes written to flush the L2 cache (Triton writes 256 MB; an H100 has 50 MB of L2).
pub const L2_FLUSH_BYTES: usize = 256 << 20;

/// The L2-flush buffer of a GPU, allocated once per device and process.
#[cfg(feature = "cuda")]
fn flush_buffer(dev: &std::sync::Arc<crate::cuda::CudaDevice>) -> Result<std::sync::Arc<crate::cuda::memory::DeviceBuffer<i32>>, DeviceError> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, PoisonError};
    static BUFFERS: Mutex<Option<HashMap<usize, Arc<crate::cuda::memory::DeviceBuffer<i32>>>>> = Mutex::new(None);
    let mut buffers = BUFFERS.lock().unwrap_or_else(PoisonError::into_inner);
    let map = buffers.get_or_insert_with(HashMap::new);
    if let Some(b) = map.get(&dev.ordinal) {
        return Ok(Arc::clone(b));
    }
    let b = Arc::new(crate::cuda::memory::DeviceBuffer::<i32>::zeros(dev, L2_FLUSH_BYTES / 4)?);
    map.insert(dev.ordinal, Arc::clone(&b));
    Ok(b)
}

/// Times `f` on `device` with Triton's `do_bench` method: one untimed call, then estimate one call from five,
/// choose the numbers of warm-up and timed calls from [`BenchOptions`] (25 ms and 100 ms
/// by default), flush the L2 cache before each timed call by writing a 256 MiB buffer
/// (a `cuMemsetD8Async`, outside the timed region), and time each call with a pair of
/// CUDA events on the device's stream. `f` must queue its work on the device's stream
/// (every kernel launch and [`crate::baseline`] call does).
///
/// On the CPU the same counts are used with wall-clock times (no flush).
///
/// # Errors
/// The first error of `f`, or a [`DeviceError`] from the device (including a failed
/// kernel, reported when the device is synchronized).
///
/// ```
/// use kernel_runtime::testing::{do_bench_gpu, BenchOptions};
/// use kernel_runtime::{Device, DeviceError};
/// let opts = BenchOptions { warmup_ms: 1.0, rep_ms: 2.0, ..BenchOptions::default() };
/// let r = do_bench_gpu(&Device::cpu(), || Ok::<_, DeviceError>(std::hint::black_box(1 + 1)), &opts).unwrap();
/// assert!(r.reps >= 1 && r.min_ms <= r.median_ms);
/// ```
pub fn do_bench_gpu<R, E: From<DeviceError>>(
    device: &Device,
    mut f: impl FnMut() -> Result<R, E>,
    opts: &BenchOptions,
) -> Result<BenchResult, E> {
    let mut call = || f().map(|r| drop(black_box(r)));
    let mut results = do_bench_gpu_interleaved(device, &mut [&mut call], opts)?;
    Ok(results.remove(0))
}

/// One function to time with [`do_bench_gpu_interleaved`].
pub type BenchFn<'a, E> = &'a mut dyn FnMut() -> Result<(), E>;

/// Times several functions with [`do_bench_gpu`]'s method, their calls interleaved: each
/// function's call counts come from its own estimate (as in [`do_bench_gpu`]), then the
/// warm-up calls and the timed calls run in rounds, one call of each function per round,
/// the order rotated by one function each round (a function whose count is reached sits the
/// remaining rounds out). Every function is
/// then timed over the same stretch of time, so a GPU whose clock falls as it heats up
/// (an H100 at its power limit) slows all of them alike, instead of favouring the first
/// one timed after an idle spell. Returns one result per function, in order.
///
/// # Errors
/// The first error of any function, or a [`DeviceError`] from the device.
///
/// ```
/// use kernel_runtime::testing::{do_bench_gpu_interleaved, BenchOptions};
/// use kernel_runtime::{Device, DeviceError};
/// let opts = BenchOptions { warmup_ms: 1.0, rep_ms: 2.0, ..BenchOptions::default() };
/// let (mut a, mut b) = (0u64, 0u64);
/// let mut fa = || { a += 1; Ok::<_, DeviceError>(()) };
/// let mut fb = || { b += 2; Ok::<_, DeviceError>(()) };
/// let r = do_bench_gpu_interleaved(&Device::cpu(), &mut [&mut fa, &mut fb], &opts).unwrap();
/// assert_eq!(r.len(), 2);
/// assert!(r.iter().all(|r| r.reps >= 1 && r.min_ms <= r.median_ms));
/// ```
pub fn do_bench_gpu_interleaved<E: From<DeviceError>>(
    device: &Device,
    fs: &mut [BenchFn<'_, E>],
    opts: &BenchOptions,
) -> Result<Vec<BenchResult>, E> {
    #[cfg(feature = "cuda")]
    if let Some(dev) = device.cuda_device() {
        return bench_cuda_interleaved(device, dev, fs, opts);
    }
    let _ = device;
    bench_wall_interleaved(fs, opts)
}

/// [`do_bench_gpu_interleaved`] on a GPU: CUDA events on its stream.
#[cfg(feature = "cuda")]
fn bench_cuda_interleaved<E: From<DeviceError>>(
    device: &Device,
    dev: &std::sync::Arc<crate::cuda::CudaDevice>,
    fs: &mut [BenchFn<'_, E>],
    opts: &BenchOptions,
) -> Result<Vec<BenchResult>, E> {
    device.synchronize()?;
    let flush = if opts.flush_l2 { Some(flush_buffer(dev)?) } else { None };
    let flush_l2 = || -> Result<(), DeviceError> {
        match &flush {
            // SAFETY: the range is the whole buffer, which lives as long as the process.
            Some(b) => unsafe { dev.memset_d8(b.device_ptr(), 0, L2_FLUSH_BYTES) },
            None => Ok(()),
        }
    };
    let stream = &dev.stream;
    // Estimate one call of each function from five (flush included), after a first call that
    // pays one-time costs such as a library's set-up (as Triton does).
    let mut counts = Vec::with_capacity(fs.len());
    for f in fs.iter_mut() {
        f()?;
        device.synchronize()?;
        let (start, end) = crate::cuda::timing_events(dev)?;
        dev.call("cuEventRecord", || start.record(stream))?;
        for _ in 0..5 {
            flush_l2()?;
            f()?;
        }
        dev.call("cuEventRecord", || end.record(stream))?;
        counts.push(opts.counts(f64::from(dev.call("cuEventElapsedTime", || start.elapsed_ms(&end))?) / 5.0));
    }
    let (warm_ups, reps): (Vec<usize>, Vec<usize>) = counts.into_iter().unzip();
    in_rounds(&warm_ups, |i, _| fs[i]())?;
    // The events are created before the timed calls, so that nothing else runs between them.
    let events = reps
        .iter()
        .map(|&r| (0..r).map(|_| crate::cuda::timing_events(dev)).collect::<Result<Vec<_>, _>>())
        .collect::<Result<Vec<_>, _>>()?;
    in_rounds(&reps, |i, round| -> Result<(), E> {
        let (s, e) = &events[i][round];
        flush_l2()?;
        dev.call("cuEventRecord", || s.record(stream))?;
        fs[i]()?;
        dev.call("cuEventRecord", || e.record(stream))?;
        Ok(())
    })?;
    device.synchronize()?;
    events
        .iter()
        .map(|ev| {
            let mut times = ev
                .iter()
                .map(|(s, e)| dev.call("cuEventElapsedTime", || s.elapsed_ms(e)).map(f64::from))
                .collect::<Result<Vec<f64>, _>>()?;
            Ok(BenchResult::from_samples(&mut times))
        })
        .collect()
}

/// Runs `call(i, round)` `counts[i]` times for each function `i`, in rounds of one call per
/// function that has calls left; round `r` starts at function `r % n`, so that over the rounds
/// each function follows each other one equally often (a function timed right after a
/// particular one, say one that leaves the GPU hotter, is not favoured or penalized).
fn in_rounds<E>(counts: &[usize], mut call: impl FnMut(usize, usize) -> Result<(), E>) -> Result<(), E> {
    let n = counts.len();
    for round in 0..counts.iter().copied().max().unwrap_or(0) {
        for i in (0..n).map(|j| (round + j) % n) {
            if round < counts[i] {
                call(i, round)?;
            }
        }
    }
    Ok(())
}

/// [`do_bench_gpu_interleaved`]'s method with wall-clock times (the CPU device).
fn bench_wall_interleaved<E>(fs: &mut [BenchFn<'_, E>], opts: &BenchOptions) -> Result<Vec<BenchResult>, E> {
    let mut counts = Vec::with_capacity(fs.len());
    for f in fs.iter_mut() {
        f()?;
        let start = Instant::now();
        for _ in 0..5 {
            f()?;
        }
        counts.push(opts.counts(start.elapsed().as_secs_f64() * 1e3 / 5.0));
    }
    let (warm_ups, reps): (Vec<usize>, Vec<usize>) = counts.into_iter().unzip();
    in_rounds(&warm_ups, |i, _| fs[i]())?;
    let mut times: Vec<Vec<f64>> = reps.iter().map(|&r| Vec::with_capacity(r)).collect();
    in_rounds(&reps, |i, _| {
        let start = Instant::now();
        fs[i]()?;
        times[i].push(start.elapsed().as_secs_f64() * 1e3);
        Ok(())
    })?;
    Ok(times.iter_mut().map(|t| BenchResult::from_samples(t)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{bf16, f16, Device};

    #[test]
    fn allclose_rules() {
        assert!(allclose(&[], &[], 0.0, 0.0));
        assert!(!allclose(&[1.0], &[1.0, 2.0], 1.0, 1.0));
        assert!(allclose(&[100.5], &[100.0], 0.0, 0.01));
        assert!(!allclose(&[100.5], &[100.0], 0.0, 0.001));
        assert!(allclose(&[f64::INFINITY, f64::NAN], &[f64::INFINITY, f64::NAN], 0.0, 0.0));
        assert!(!allclose(&[f64::NAN], &[0.0], 1e9, 1e9));
        assert!(!allclose(&[1e300], &[f64::INFINITY], 1e9, 1e9));
    }

    #[test]
    fn report_names_count_worst_and_index() {
        let t = Tensor::from_vec(&Device::cpu(), &[2, 3], vec![0.0f32, 1.0, 2.0, 3.0, 4.0, f32::NAN]).unwrap();
        let err = assert_close(&t, &[0.0, 1.5, 2.0, 3.0, 4.2, 5.0]).unwrap_err();
        // The NaN at [1, 2] is the worst mismatch (infinite error).
        let CloseError::NotClose { mismatches, total, index, max_abs_err, actual, expected, tol } = &err else {
            panic!("unexpected {err:?}")
        };
        assert_eq!((*mismatches, *total, index.as_slice()), (3, 6, &[1usize, 2][..]));
        assert_eq!((*max_abs_err, *expected), (f64::INFINITY, 5.0));
        assert!(actual.is_nan());
        assert_eq!(*tol, Tolerance { atol: 1e-4, rtol: 1e-4 });
        assert!(err.to_string().starts_with("not close: 3 of 6 elements differ (atol 0.0001, rtol 0.0001)"));
        let err = assert_close(&t, &[0.0; 5]).unwrap_err();
        assert_eq!(err, CloseError::LengthMismatch { actual: 6, expected: 5 });
    }

    #[test]
    fn dtype_tolerances() {
        let h = Tensor::full(&Device::cpu(), &[1], f16::from_f32(1.0)).unwrap();
        assert!(assert_close(&h, &[1.009]).is_ok());
        assert!(assert_close(&h, &[1.03]).is_err());
        let b = Tensor::full(&Device::cpu(), &[1], bf16::from_f32(1.0)).unwrap();
        assert!(assert_close(&b, &[1.05]).is_ok());
        let i = Tensor::full(&Device::cpu(), &[1], 3i32).unwrap();
        assert!(assert_close(&i, &[3.0]).is_ok() && assert_close(&i, &[3.5]).is_err());
    }

    #[test]
    fn reference_matmul_and_bench() {
        // [2, 3] x [3, 1]
        let c = matmul_ref_f64(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 1.0, 2.0], 2, 1, 3);
        assert_eq!(c, vec![9.0, 21.0]);
        assert_eq!(matmul_ref_f64(&[], &[], 2, 2, 0), vec![0.0; 4]);
        let mut calls = 0;
        let r = do_bench(|| calls += 1, 3, 4);
        assert_eq!(calls, 7);
        assert!(r.min_ms <= r.median_ms && r.median_ms <= r.max_ms && r.min_ms >= 0.0);
        assert!(r.min_ms <= r.mean_ms && r.mean_ms <= r.max_ms);
        assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
        assert_eq!(unravel(0, &[]), Vec::<usize>::new());
    }

    #[test]
    fn statistics_and_quantiles() {
        let r = BenchResult::from_samples(&mut [4.0, 1.0, 3.0, 2.0, 5.0]);
        assert_eq!((r.median_ms, r.min_ms, r.max_ms, r.mean_ms, r.reps), (3.0, 1.0, 5.0, 3.0, 5));
        assert!((r.p20_ms - 1.8).abs() < 1e-12 && (r.p80_ms - 4.2).abs() < 1e-12);
        let one = BenchResult::from_samples(&mut [7.0]);
        assert_eq!((one.p20_ms, one.median_ms, one.p80_ms), (7.0, 7.0, 7.0));
    }

    #[test]
    fn budgets_choose_the_counts() {
        let o = BenchOptions::default();
        assert_eq!(o.counts(1.0), (25, 100));
        assert_eq!(o.counts(0.001), (10_000, 10_000));
        assert_eq!(o.counts(f64::NAN), (10_000, 10_000));
        assert_eq!(BenchOptions { max_reps: 0, ..o }.counts(1.0), (1, 1));
    }

    #[test]
    fn device_bench_on_the_cpu_uses_the_wall_clock_and_stops_at_errors() {
        let opts = BenchOptions { warmup_ms: 2.0, rep_ms: 5.0, flush_l2: true, max_reps: 50 };
        let mut calls = 0usize;
        let r = do_bench_gpu(
            &Device::cpu(),
            || {
                calls += 1;
                std::thread::sleep(std::time::Duration::from_micros(200));
                Ok::<_, DeviceError>(())
            },
            &opts,
        )
        .unwrap();
        assert!(r.reps >= 1 && r.reps <= 50 && calls > 5 + r.reps, "{r:?} {calls}");
        assert!(r.min_ms >= 0.15, "{r:?}");
        let mut n = 0;
        let err = do_bench_gpu(
            &Device::cpu(),
            || {
                n += 1;
                if n == 3 {
                    Err(DeviceError::NoSuchDevice { ordinal: 9, count: 0 })
                } else {
                    Ok(())
                }
            },
            &opts,
        )
        .unwrap_err();
        assert_eq!(err, DeviceError::NoSuchDevice { ordinal: 9, count: 0 });
    }

    #[test]
    fn rounds_rotate_and_give_each_function_its_count() {
        let mut order = Vec::new();
        in_rounds(&[2, 4, 1], |i, round| {
            order.push((i, round));
            Ok::<_, ()>(())
        })
        .unwrap();
        // Round r starts at function r % 3; functions without calls left are skipped.
        assert_eq!(order, [(0, 0), (1, 0), (2, 0), (1, 1), (0, 1), (1, 2), (1, 3)]);
        let mut n = 0;
        assert_eq!(in_rounds(&[3, 3], |_, _| if { n += 1; n } == 4 { Err("stop") } else { Ok(()) }), Err("stop"));
        assert_eq!(n, 4);
    }

    #[test]
    fn interleaved_bench_alternates_the_calls_and_counts_each_from_its_own_estimate() {
        use std::cell::RefCell;
        use std::time::Duration;
        let opts = BenchOptions { warmup_ms: 4.0, rep_ms: 12.0, flush_l2: false, max_reps: 1000 };
        let log = RefCell::new(Vec::new());
        // Calls 40x apart, so that the estimates keep their order on a loaded machine (the
        // sleeps only bound the times from below).
        let mut fast = || {
            log.borrow_mut().push('f');
            std::thread::sleep(Duration::from_micros(50));
            Ok::<_, DeviceError>(())
        };
        let mut slow = || {
            log.borrow_mut().push('s');
            std::thread::sleep(Duration::from_micros(2000));
            Ok::<_, DeviceError>(())
        };
        let r = do_bench_gpu_interleaved(&Device::cpu(), &mut [&mut fast, &mut slow], &opts).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r[0].min_ms >= 0.04 && r[1].min_ms >= 1.9, "{r:?}");
        // Each function's repetitions follow its own estimate: 12 ms of 2 ms calls is at most 6.
        assert!(r[1].reps <= 6 && r[0].reps > r[1].reps, "{r:?}");
        let log = log.into_inner();
        // A first call and five estimate calls each, one after the other, then rounds of one
        // call each.
        assert_eq!(log[..12].iter().collect::<String>(), "ffffffssssss");
        let rounds: String = log[12..].iter().collect();
        // Warm-up rounds, then timed ones; the order rotates (`fs`, then `sf`, ...) while both
        // functions have calls left.
        assert!(rounds.starts_with("fs") && rounds.contains("fssf"), "{rounds}");
        assert!(rounds.matches('s').count() > r[1].reps, "{rounds}");
        assert!(!rounds.contains("sss"), "{rounds}");
        // An error of any function stops the run and is returned.
        let mut n = 0;
        let mut ok = || Ok::<_, DeviceError>(());
        let mut failing = || {
            n += 1;
            if n == 8 {
                Err(DeviceError::NoSuchDevice { ordinal: 3, count: 0 })
            } else {
                Ok(())
            }
        };
        let err = do_bench_gpu_interleaved(&Device::cpu(), &mut [&mut ok, &mut failing], &opts).unwrap_err();
        assert_eq!(err, DeviceError::NoSuchDevice { ordinal: 3, count: 0 });
    }
}
