//! Benchmark sweeps for Triton-style kernels: the counterpart of
//! `triton.testing.perf_report` and `triton.testing.Benchmark`.
//!
//! Describe a sweep with a [`Benchmark`] (x values × providers), measure each
//! [`Point`] with [`perf_report`], and get a [`Report`] that prints as an
//! aligned table, writes CSV, draws SVG and PNG line charts, and compares
//! providers ([`Report::ratios`], [`Report::geomean_ratio`]).
//!
//! ```
//! use kernel_bench::{flops_matmul, perf_report, Benchmark, Color, LineStyle, Measurement};
//!
//! let bench = Benchmark::new("matmul-performance")
//!     .x_names(["M", "N", "K"])
//!     .x_vals((2..9).map(|i| 256 * i))
//!     .line_arg("provider")
//!     .line("cublas", "cuBLAS", (Color::GREEN, LineStyle::Solid))
//!     .line("triton", "Triton", (Color::BLUE, LineStyle::Solid))
//!     .ylabel("TFLOPS");
//! let report = perf_report(&bench, |p| {
//!     let (m, n, k) = (p.x_usize("M")?, p.x_usize("N")?, p.x_usize("K")?);
//!     // Time the provider here, e.g. with kernel_runtime::testing::do_bench.
//!     let ms = if p.provider() == "cublas" { 0.9 } else { 1.0 } * (m * n * k) as f64 * 1e-11;
//!     Ok::<_, kernel_bench::BenchError>(Measurement::from_ms(ms, ms * 0.95, ms * 1.1, |ms| flops_matmul(m, n, k, ms)))
//! })
//! .unwrap();
//! print!("{}", report.to_table());
//! let speed = report.geomean_ratio("triton", "cublas", 1024..=2048).unwrap();
//! assert!((speed - 0.9).abs() < 1e-9);
//! // report.save("target/bench")? writes matmul-performance.{csv,svg,png}.
//! ```
//!
//! Configuration: [`Benchmark::progress`] (or `KERNEL_BENCH_PROGRESS=1`)
//! logs each point as it is measured at level `info` (the `log` crate: install a logger such
//! as `env_logger` to see it).
//!
//! PNG text is drawn with an embedded copy of DejaVu Sans
//! (`assets/DejaVuSans.ttf`, license in `assets/LICENSE-DejaVu.txt`), so
//! plots render the same on machines without fonts.

#![warn(missing_docs)]

mod benchmark;
mod error;
mod measure;
mod plot;
mod report;
mod sweep;
mod text;

pub use benchmark::{Benchmark, Color, LineStyle, XVal};
pub use error::BenchError;
pub use measure::{flops_matmul, gbps, tflops, Measurement};
pub use report::{Failure, Report, SavedFiles};
pub use sweep::{perf_report, Point};
