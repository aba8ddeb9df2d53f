//! What one point of a sweep returns: [`Measurement`], and throughput helpers.

/// The result of one point: a central value and its spread, in the unit of
/// the benchmark's `ylabel`.
///
/// Triton's benchmark functions return `perf(ms), perf(max_ms), perf(min_ms)`:
/// the throughput at the median time and at the slowest and fastest times.
/// [`Measurement::from_ms`] does exactly that.
///
/// ```
/// use kernel_bench::Measurement;
/// let m = Measurement::new(100.0, 90.0, 105.0);
/// assert_eq!((m.value, m.min, m.max), (100.0, 90.0, 105.0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measurement {
    /// The central value (e.g. TFLOPS at the median time).
    pub value: f64,
    /// The low end of the spread (e.g. TFLOPS at the slowest time).
    pub min: f64,
    /// The high end of the spread (e.g. TFLOPS at the fastest time).
    pub max: f64,
}

impl Measurement {
    /// A measurement from its value and spread.
    ///
    /// ```
    /// let m = kernel_bench::Measurement::new(2.0, 1.0, 3.0);
    /// assert_eq!(m.max, 3.0);
    /// ```
    pub fn new(value: f64, min: f64, max: f64) -> Self {
        Measurement { value, min, max }
    }

    /// A measurement with no spread.
    ///
    /// ```
    /// let m = kernel_bench::Measurement::exact(2.0);
    /// assert_eq!((m.min, m.max), (2.0, 2.0));
    /// ```
    pub fn exact(value: f64) -> Self {
        Measurement { value, min: value, max: value }
    }

    /// Converts timings in milliseconds with `perf` (e.g. a TFLOPS formula):
    /// `value = perf(ms)`, and `min`/`max` are the smaller and larger of
    /// `perf(min_ms)` and `perf(max_ms)`, so a throughput (which falls as
    /// time grows) and a time both come out ordered.
    ///
    /// ```
    /// use kernel_bench::{flops_matmul, Measurement};
    /// let m = Measurement::from_ms(1.0, 0.5, 2.0, |ms| flops_matmul(1024, 1024, 1024, ms));
    /// assert!(m.min < m.value && m.value < m.max);
    /// assert_eq!(m.max, flops_matmul(1024, 1024, 1024, 0.5));
    /// ```
    pub fn from_ms(ms: f64, min_ms: f64, max_ms: f64, perf: impl Fn(f64) -> f64) -> Self {
        let (a, b) = (perf(min_ms), perf(max_ms));
        Measurement { value: perf(ms), min: a.min(b), max: a.max(b) }
    }

    /// The measurement as stored in a report: `value` must be finite; a
    /// non-finite `min` or `max` falls back to `value`, and a reversed spread
    /// is put in order.
    pub(crate) fn normalized(self) -> Result<Self, String> {
        if !self.value.is_finite() {
            return Err(format!("measurement is not finite (value = {})", self.value));
        }
        let min = if self.min.is_finite() { self.min } else { self.value };
        let max = if self.max.is_finite() { self.max } else { self.value };
        Ok(Measurement { value: self.value, min: min.min(max), max: min.max(max) })
    }
}

/// Throughput in TFLOP/s of an `m`×`k` by `k`×`n` matrix product that took
/// `ms` milliseconds: `2·m·n·k / (ms·10⁻³) / 10¹²`, the seeds'
/// `perf = lambda ms: 2 * M * N * K * 1e-12 / (ms * 1e-3)`.
///
/// A zero time gives infinity, which [`perf_report`](crate::perf_report)
/// records as a failed point.
///
/// ```
/// use kernel_bench::flops_matmul;
/// // 2 * 1000^3 flops in 1 ms = 2 TFLOP/s.
/// assert!((flops_matmul(1000, 1000, 1000, 1.0) - 2.0).abs() < 1e-12);
/// ```
pub fn flops_matmul(m: usize, n: usize, k: usize, ms: f64) -> f64 {
    tflops(2.0 * m as f64 * n as f64 * k as f64, ms)
}

/// Throughput in TFLOP/s of `flop` floating-point operations done in `ms`
/// milliseconds.
///
/// ```
/// assert_eq!(kernel_bench::tflops(3e9, 1.0), 3.0);
/// ```
pub fn tflops(flop: f64, ms: f64) -> f64 {
    flop * 1e-12 / (ms * 1e-3)
}

/// Bandwidth in GB/s of moving `bytes` bytes in `ms` milliseconds (the unit
/// of Triton's memory-bound tutorials).
///
/// ```
/// assert_eq!(kernel_bench::gbps(2e6, 1.0), 2.0);
/// ```
pub fn gbps(bytes: f64, ms: f64) -> f64 {
    bytes * 1e-9 / (ms * 1e-3)
}
