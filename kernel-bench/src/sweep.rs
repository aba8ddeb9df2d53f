//! Running a sweep: [`perf_report`] calls the benchmark function at every
//! [`Point`] and collects a [`Report`].

use std::fmt;

use crate::{BenchError, Benchmark, Measurement, Report, XVal};

/// One point of a sweep: an x value (shared by all x names) and a provider.
///
/// ```
/// use kernel_bench::{perf_report, Benchmark, Measurement};
/// let bench = Benchmark::new("p").x_names(["M", "N"]).x_vals([64]).line_vals(["a"]).line_names(["A"]);
/// perf_report(&bench, |p| {
///     assert_eq!(p.x_usize("N")?, 64);
///     assert_eq!(p.provider(), "a");
///     assert_eq!(p.to_string(), "M=64 N=64 provider=a");
///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
/// })
/// .unwrap();
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Point<'a> {
    bench: &'a Benchmark,
    x_index: usize,
    provider_index: usize,
}

impl<'a> Point<'a> {
    /// The value of x name `name`.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement, XVal};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([0.5]).line_vals(["a"]).line_names(["A"]);
    /// perf_report(&bench, |p| {
    ///     assert_eq!(p.x("M")?, XVal::Float(0.5));
    ///     assert!(p.x("Q").is_err());
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// ```
    pub fn x(&self, name: &str) -> Result<XVal, BenchError> {
        if self.bench.x_names.iter().any(|n| n == name) {
            Ok(self.x_val())
        } else {
            Err(BenchError::UnknownXName { name: name.to_string(), known: self.bench.x_names.clone() })
        }
    }

    /// The value of x name `name` as `f64`.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([8]).line_vals(["a"]).line_names(["A"]);
    /// perf_report(&bench, |p| {
    ///     assert_eq!(p.x_f64("M")?, 8.0);
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// ```
    pub fn x_f64(&self, name: &str) -> Result<f64, BenchError> {
        self.x(name).map(XVal::as_f64)
    }

    /// The value of x name `name` as `i64`; an error if it is not an integer.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([-8]).line_vals(["a"]).line_names(["A"]);
    /// perf_report(&bench, |p| {
    ///     assert_eq!(p.x_i64("M")?, -8);
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// ```
    pub fn x_i64(&self, name: &str) -> Result<i64, BenchError> {
        let v = self.x(name)?;
        v.as_i64().ok_or_else(|| self.not_integer(name, v, "i64"))
    }

    /// The value of x name `name` as `usize` (a size); an error if it is not
    /// a non-negative integer.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([-8]).line_vals(["a"]).line_names(["A"]);
    /// perf_report(&bench, |p| {
    ///     assert!(p.x_usize("M").is_err());
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// ```
    pub fn x_usize(&self, name: &str) -> Result<usize, BenchError> {
        let v = self.x(name)?;
        v.as_i64().and_then(|i| usize::try_from(i).ok()).ok_or_else(|| self.not_integer(name, v, "usize"))
    }

    /// The provider of this point: an entry of `line_vals`.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([8]).line_vals(["cublas"]).line_names(["cuBLAS"]);
    /// perf_report(&bench, |p| {
    ///     assert_eq!((p.provider(), p.line_name()), ("cublas", "cuBLAS"));
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// ```
    pub fn provider(&self) -> &'a str {
        &self.bench.line_vals[self.provider_index]
    }

    /// The display name of this point's provider: its `line_names` entry.
    ///
    /// See [`Point::provider`] for an example.
    pub fn line_name(&self) -> &'a str {
        &self.bench.line_names[self.provider_index]
    }

    /// A fixed argument from the benchmark's `args`.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([8]).line_vals(["a"]).line_names(["A"]).arg("dtype", "f16");
    /// perf_report(&bench, |p| {
    ///     assert_eq!((p.arg("dtype"), p.arg("layout")), (Some("f16"), None));
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// ```
    pub fn arg(&self, name: &str) -> Option<&'a str> {
        self.bench.args.get(name).map(String::as_str)
    }

    /// The x value of this point.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement, XVal};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([8, 16]).line_vals(["a"]).line_names(["A"]);
    /// let mut seen = vec![];
    /// perf_report(&bench, |p| {
    ///     seen.push((p.x_index(), p.x_val()));
    ///     Ok::<_, kernel_bench::BenchError>(Measurement::exact(1.0))
    /// })
    /// # .unwrap();
    /// assert_eq!(seen, [(0, XVal::Int(8)), (1, XVal::Int(16))]);
    /// ```
    pub fn x_val(&self) -> XVal {
        self.bench.x_vals[self.x_index]
    }

    /// The position of this point's x value in `x_vals`.
    ///
    /// See [`Point::x_val`] for an example.
    pub fn x_index(&self) -> usize {
        self.x_index
    }

    /// The position of this point's provider in `line_vals`.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M"]).x_vals([8]).line_vals(["a", "b"]).line_names(["A", "B"]);
    /// perf_report(&bench, |p| Ok::<_, String>(Measurement::exact(p.provider_index() as f64 + 1.0)))
    /// # .unwrap();
    /// ```
    pub fn provider_index(&self) -> usize {
        self.provider_index
    }

    fn not_integer(&self, name: &str, v: XVal, wanted: &'static str) -> BenchError {
        BenchError::NotAnInteger { name: name.to_string(), value: v.to_string(), wanted }
    }
}

/// `M=512 N=512 K=512 provider=triton`.
impl fmt::Display for Point<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.x_val();
        for name in &self.bench.x_names {
            write!(f, "{name}={x} ")?;
        }
        write!(f, "{}={}", self.bench.line_arg, self.provider())
    }
}

/// Runs `f` at every point of `bench` — every x value, and for each every
/// provider, in that order — and collects the results: Triton's
/// `@perf_report(Benchmark(...))` followed by `benchmark.run()`.
///
/// A point where `f` returns an error, or a measurement whose value is not
/// finite, is kept as missing (NaN in the table, a gap in the plot) with its
/// message, and the sweep goes on. The only errors are an invalid `bench`
/// (see [`Benchmark::validate`]). Each point is logged (the `log` crate, target
/// `kernel_bench`) as it finishes: at level `info` with `bench.progress` or
/// `KERNEL_BENCH_PROGRESS=1`, else `debug`.
///
/// ```
/// use kernel_bench::{flops_matmul, perf_report, Benchmark, Color, LineStyle, Measurement};
/// let bench = Benchmark::new("matmul-performance")
///     .x_names(["M", "N", "K"])
///     .x_vals([256, 512])
///     .line("cublas", "cuBLAS", (Color::GREEN, LineStyle::Solid))
///     .line("triton", "Triton", (Color::BLUE, LineStyle::Solid))
///     .ylabel("TFLOPS");
/// let report = perf_report(&bench, |p| {
///     let (m, n, k) = (p.x_usize("M")?, p.x_usize("N")?, p.x_usize("K")?);
///     if p.provider() == "triton" && m == 512 {
///         return Err("out of shared memory".into());
///     }
///     let (ms, min_ms, max_ms) = (0.010, 0.009, 0.012); // e.g. from do_bench
///     Ok::<_, Box<dyn std::error::Error>>(Measurement::from_ms(ms, min_ms, max_ms, |ms| flops_matmul(m, n, k, ms)))
/// })
/// .unwrap();
/// assert_eq!(report.failures().len(), 1);
/// println!("{}", report.to_table());
/// ```
pub fn perf_report<E: fmt::Display>(
    bench: &Benchmark,
    mut f: impl FnMut(&Point<'_>) -> Result<Measurement, E>,
) -> Result<Report, BenchError> {
    bench.validate()?;
    let progress = bench.progress || std::env::var("KERNEL_BENCH_PROGRESS").is_ok_and(|v| v == "1");
    let level = if progress { log::Level::Info } else { log::Level::Debug };
    let total = bench.x_vals.len() * bench.line_vals.len();
    let mut cells = Vec::with_capacity(bench.x_vals.len());
    for x_index in 0..bench.x_vals.len() {
        let mut row = Vec::with_capacity(bench.line_vals.len());
        for provider_index in 0..bench.line_vals.len() {
            let point = Point { bench, x_index, provider_index };
            let cell = match f(&point) {
                Ok(m) => m.normalized(),
                Err(e) => Err(format!("{e:#}")),
            };
            if log::log_enabled!(level) {
                let done = x_index * bench.line_vals.len() + provider_index + 1;
                match &cell {
                    Ok(m) => log::log!(level, "[{}] {done}/{total} {point}: {:.6}", bench.plot_name, m.value),
                    Err(msg) => log::log!(level, "[{}] {done}/{total} {point}: failed: {msg}", bench.plot_name),
                }
            }
            row.push(cell);
        }
        cells.push(row);
    }
    Ok(Report::new(bench.clone(), cells))
}
