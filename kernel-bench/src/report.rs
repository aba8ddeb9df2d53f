//! The results of a sweep: [`Report`], with its table, CSV, plots and ratios.

use std::fmt::{self, Write as _};
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};

use crate::{plot, BenchError, Benchmark, Measurement, XVal};

/// The results of [`perf_report`](crate::perf_report): one measurement or
/// failure per x value and provider, with the [`Benchmark`] that produced them.
///
/// ```
/// use kernel_bench::{perf_report, Benchmark, Measurement};
/// let bench = Benchmark::new("demo").x_names(["N"]).x_vals([1, 2]).line_vals(["a", "b"]).line_names(["A", "B"]);
/// let report = perf_report(&bench, |p| Ok::<_, String>(Measurement::exact(p.x_f64("N").unwrap()))).unwrap();
/// assert_eq!(report.ratios("a", "b").unwrap(), [(1.into(), 1.0), (2.into(), 1.0)]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    bench: Benchmark,
    /// `cells[x_index][provider_index]`: the measurement, or why it is missing.
    cells: Vec<Vec<Result<Measurement, String>>>,
}

/// A point whose measurement failed, as listed by [`Report::failures`].
///
/// ```
/// use kernel_bench::{perf_report, Benchmark, Measurement, XVal};
/// let bench = Benchmark::new("p").x_names(["N"]).x_vals([8]).line_vals(["a"]).line_names(["A"]);
/// let report = perf_report(&bench, |_| Err::<Measurement, _>("no GPU")).unwrap();
/// let f = &report.failures()[0];
/// assert_eq!((f.x, f.provider.as_str(), f.message.as_str()), (XVal::Int(8), "a", "no GPU"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The x value of the point.
    pub x: XVal,
    /// The provider (`line_vals` entry) of the point.
    pub provider: String,
    /// The error message of the benchmark function.
    pub message: String,
}

/// The files written by [`Report::save`].
///
/// ```
/// let files = kernel_bench::SavedFiles { csv: "a.csv".into(), svg: "a.svg".into(), png: "a.png".into() };
/// assert_eq!(files.png.extension().unwrap(), "png");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedFiles {
    /// `<plot_name>.csv`
    pub csv: PathBuf,
    /// `<plot_name>.svg`
    pub svg: PathBuf,
    /// `<plot_name>.png`
    pub png: PathBuf,
}

impl Report {
    pub(crate) fn new(bench: Benchmark, cells: Vec<Vec<Result<Measurement, String>>>) -> Self {
        Report { bench, cells }
    }

    /// The benchmark this report was produced from.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([8]).line_vals(["a"]).line_names(["A"]);
    /// let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::exact(1.0))).unwrap();
    /// assert_eq!(report.benchmark(), &bench);
    /// ```
    pub fn benchmark(&self) -> &Benchmark {
        &self.bench
    }

    /// The x values and measurements of one provider (a `line_vals` or
    /// `line_names` entry); `None` where the point failed.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([1, 2]).line_vals(["a"]).line_names(["A"]);
    /// let report = perf_report(&bench, |p| {
    ///     if p.x_index() == 0 { Err("boom") } else { Ok(Measurement::exact(5.0)) }
    /// })
    /// .unwrap();
    /// let s = report.series("A").unwrap();
    /// assert_eq!(s[0].1, None);
    /// assert_eq!(s[1].1, Some(Measurement::exact(5.0)));
    /// ```
    pub fn series(&self, provider: &str) -> Result<Vec<(XVal, Option<Measurement>)>, BenchError> {
        let p = self.bench.provider_index(provider)?;
        Ok(self.column(p).collect())
    }

    /// Every failed point, in sweep order.
    ///
    /// See [`Failure`] for an example.
    pub fn failures(&self) -> Vec<Failure> {
        let mut out = Vec::new();
        for (x, row) in self.bench.x_vals.iter().zip(&self.cells) {
            for (provider, cell) in self.bench.line_vals.iter().zip(row) {
                if let Err(message) = cell {
                    out.push(Failure { x: *x, provider: provider.clone(), message: message.clone() });
                }
            }
        }
        out
    }

    /// `numerator / denominator` of the two providers' values at each x value
    /// where both were measured (points where either failed are left out).
    /// Providers are named by `line_vals` or `line_names` entry.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement, XVal};
    /// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([1, 2]).line_vals(["ours", "cublas"]).line_names(["Ours", "cuBLAS"]);
    /// let report = perf_report(&bench, |p| {
    ///     Ok::<_, String>(Measurement::exact(if p.provider() == "ours" { 90.0 } else { 100.0 }))
    /// })
    /// .unwrap();
    /// assert_eq!(report.ratios("ours", "cuBLAS").unwrap(), [(XVal::Int(1), 0.9), (XVal::Int(2), 0.9)]);
    /// ```
    pub fn ratios(&self, numerator: &str, denominator: &str) -> Result<Vec<(XVal, f64)>, BenchError> {
        let (n, d) = (self.bench.provider_index(numerator)?, self.bench.provider_index(denominator)?);
        Ok(self.column(n).zip(self.column(d)).filter_map(|((x, a), (_, b))| Some((x, a?.value / b?.value))).collect())
    }

    /// The geometric mean of [`Report::ratios`] over the x values in
    /// `x_range` (e.g. "ours / cuBLAS over 2048–8192": `2048..=8192`).
    ///
    /// Errors when no x value in the range has both measurements, or when a
    /// ratio in the range is not positive and finite.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([1024, 2048, 8192]).line_vals(["ours", "cublas"]).line_names(["Ours", "cuBLAS"]);
    /// // ours / cuBLAS is 0.5 at 1024, 2.0 at 2048 and 0.5 at 8192.
    /// let report = perf_report(&bench, |p| {
    ///     let fast = p.x_index() == 1;
    ///     let v = if (p.provider() == "ours") == fast { 2.0 } else { 1.0 };
    ///     Ok::<_, String>(Measurement::exact(v))
    /// })
    /// .unwrap();
    /// let g = report.geomean_ratio("ours", "cublas", 1024..=8192).unwrap();
    /// assert!((g - 0.5f64.powf(1.0 / 3.0)).abs() < 1e-12);
    /// assert!((report.geomean_ratio("ours", "cublas", 2048..).unwrap() - 1.0).abs() < 1e-12);
    /// assert!(report.geomean_ratio("ours", "cublas", 9000..).is_err());
    /// ```
    pub fn geomean_ratio<T: Into<XVal> + Copy>(
        &self,
        numerator: &str,
        denominator: &str,
        x_range: impl RangeBounds<T>,
    ) -> Result<f64, BenchError> {
        let bound = |b: Bound<&T>| match b {
            Bound::Included(v) => Bound::Included((*v).into().as_f64()),
            Bound::Excluded(v) => Bound::Excluded((*v).into().as_f64()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let range = (bound(x_range.start_bound()), bound(x_range.end_bound()));
        let mut log_sum = 0.0;
        let mut count = 0usize;
        for (x, ratio) in self.ratios(numerator, denominator)? {
            if !range.contains(&x.as_f64()) {
                continue;
            }
            if !(ratio.is_finite() && ratio > 0.0) {
                return Err(BenchError::NonPositiveRatio { x: x.to_string(), ratio });
            }
            log_sum += ratio.ln();
            count += 1;
        }
        if count == 0 {
            return Err(BenchError::NoPointsInRange {
                numerator: numerator.to_string(),
                denominator: denominator.to_string(),
            });
        }
        Ok((log_sum / count as f64).exp())
    }

    /// The results as an aligned text table, like the seeds' printed
    /// `benchmark.run(print_data=True)` output: the plot name, then one row
    /// per x value with its index, the first x name and one column per
    /// provider (6 decimals, `NaN` where missing), then the failed points.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("matmul-performance").x_names(["M", "N", "K"]).x_vals([512, 768])
    /// #     .line_vals(["cublas", "triton"]).line_names(["cuBLAS", "Triton"]);
    /// # let report = perf_report(&bench, |p| {
    /// #     let v = match (p.x_index(), p.provider()) { (0, "cublas") => 20.164923, (0, _) => 15.420235, (_, "cublas") => 58.982401, _ => 40.215272 };
    /// #     Ok::<_, String>(Measurement::exact(v))
    /// # }).unwrap();
    /// assert_eq!(report.to_table(), "\
    /// matmul-performance:
    ///      M     cuBLAS     Triton
    /// 0  512  20.164923  15.420235
    /// 1  768  58.982401  40.215272
    /// ");
    /// ```
    pub fn to_table(&self) -> String {
        let b = &self.bench;
        let mut columns: Vec<Vec<String>> = Vec::with_capacity(b.line_vals.len() + 2);
        columns.push(std::iter::once(String::new()).chain((0..b.x_vals.len()).map(|i| i.to_string())).collect());
        columns.push(std::iter::once(b.x_names[0].clone()).chain(b.x_vals.iter().map(XVal::to_string)).collect());
        for (p, name) in b.line_names.iter().enumerate() {
            let values =
                self.column(p).map(|(_, m)| m.map_or_else(|| "NaN".to_string(), |m| format!("{:.6}", m.value)));
            columns.push(std::iter::once(name.clone()).chain(values).collect());
        }
        let widths: Vec<usize> =
            columns.iter().map(|c| c.iter().map(|s| s.chars().count()).max().unwrap_or(0)).collect();
        let mut out = format!("{}:\n", b.plot_name);
        for row in 0..=b.x_vals.len() {
            let mut line = String::new();
            for (c, (column, &w)) in columns.iter().zip(&widths).enumerate() {
                let cell = &column[row];
                let pad = " ".repeat(w - cell.chars().count());
                if c == 0 {
                    // The index column is left-aligned, as in pandas.
                    let _ = write!(line, "{cell}{pad}");
                } else {
                    let _ = write!(line, "  {pad}{cell}");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        let failures = self.failures();
        if !failures.is_empty() {
            let n = failures.len();
            let _ = writeln!(out, "\n{n} point{} failed:", if n == 1 { "" } else { "s" });
            for f in failures {
                let _ = writeln!(out, "  {}={} {}={}: {}", b.x_names[0], f.x, b.line_arg, f.provider, f.message);
            }
        }
        out
    }

    /// The results as CSV: a header of all x names and, per provider,
    /// `<line_name>`, `<line_name>-min`, `<line_name>-max`; one row per x
    /// value; empty fields where a point failed. Numbers are written with
    /// full precision.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["M", "N"]).x_vals([512]).line_vals(["a", "b"]).line_names(["A", "B, fused"]);
    /// let report = perf_report(&bench, |p| {
    ///     if p.provider() == "a" { Ok(Measurement::new(2.5, 2.0, 3.0)) } else { Err("skipped") }
    /// })
    /// .unwrap();
    /// assert_eq!(report.to_csv(), "M,N,A,A-min,A-max,\"B, fused\",\"B, fused-min\",\"B, fused-max\"\n512,512,2.5,2,3,,,\n");
    /// ```
    pub fn to_csv(&self) -> String {
        let b = &self.bench;
        let mut header: Vec<String> = b.x_names.iter().map(|n| csv_field(n)).collect();
        for name in &b.line_names {
            for suffix in ["", "-min", "-max"] {
                header.push(csv_field(&format!("{name}{suffix}")));
            }
        }
        let mut out = header.join(",");
        out.push('\n');
        for (x, row) in b.x_vals.iter().zip(&self.cells) {
            let mut fields: Vec<String> = b.x_names.iter().map(|_| x.to_string()).collect();
            for cell in row {
                match cell {
                    Ok(m) => fields.extend([m.value, m.min, m.max].map(|v| v.to_string())),
                    Err(_) => fields.extend(std::iter::repeat_n(String::new(), 3)),
                }
            }
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }

    /// The plot as an SVG document: x axis = the first x name, y axis =
    /// `ylabel`, one line per provider in its style with its min–max spread
    /// shaded, a legend of `line_names` and `plot_name` as the title.
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([1, 2]).line_vals(["a"]).line_names(["Triton"]);
    /// let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::exact(1.0))).unwrap();
    /// let svg = report.to_svg().unwrap();
    /// assert!(svg.starts_with("<svg") && svg.contains("Triton"));
    /// ```
    pub fn to_svg(&self) -> Result<String, BenchError> {
        plot::svg(self)
    }

    /// The plot of [`Report::to_svg`] as a PNG image (text drawn with the
    /// embedded DejaVu Sans font, so it needs no system fonts).
    ///
    /// ```
    /// # use kernel_bench::{perf_report, Benchmark, Measurement};
    /// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([1, 2]).line_vals(["a"]).line_names(["A"]);
    /// let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::exact(1.0))).unwrap();
    /// assert!(report.to_png().unwrap().starts_with(b"\x89PNG\r\n\x1a\n"));
    /// ```
    pub fn to_png(&self) -> Result<Vec<u8>, BenchError> {
        plot::png(self)
    }

    /// Writes [`Report::to_csv`] to `path`.
    ///
    /// ```no_run
    /// # fn f(report: &kernel_bench::Report) -> Result<(), kernel_bench::BenchError> {
    /// report.write_csv("matmul-performance.csv")?;
    /// # Ok(()) }
    /// ```
    pub fn write_csv(&self, path: impl AsRef<Path>) -> Result<(), BenchError> {
        write(path.as_ref(), self.to_csv().as_bytes())
    }

    /// Writes [`Report::to_svg`] to `path`.
    ///
    /// ```no_run
    /// # fn f(report: &kernel_bench::Report) -> Result<(), kernel_bench::BenchError> {
    /// report.write_svg("matmul-performance.svg")?;
    /// # Ok(()) }
    /// ```
    pub fn write_svg(&self, path: impl AsRef<Path>) -> Result<(), BenchError> {
        write(path.as_ref(), self.to_svg()?.as_bytes())
    }

    /// Writes [`Report::to_png`] to `path`.
    ///
    /// ```no_run
    /// # fn f(report: &kernel_bench::Report) -> Result<(), kernel_bench::BenchError> {
    /// report.write_png("matmul-performance.png")?;
    /// # Ok(()) }
    /// ```
    pub fn write_png(&self, path: impl AsRef<Path>) -> Result<(), BenchError> {
        write(path.as_ref(), &self.to_png()?)
    }

    /// Writes `<plot_name>.csv`, `<plot_name>.svg` and `<plot_name>.png` into
    /// `dir` (created if missing) and returns their paths: Triton's
    /// `run(save_path=dir)`.
    ///
    /// ```no_run
    /// # fn f(report: &kernel_bench::Report) -> Result<(), kernel_bench::BenchError> {
    /// let files = report.save("target/bench")?;
    /// println!("plot: {}", files.png.display());
    /// # Ok(()) }
    /// ```
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<SavedFiles, BenchError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
        let name = &self.bench.plot_name;
        let files = SavedFiles {
            csv: dir.join(format!("{name}.csv")),
            svg: dir.join(format!("{name}.svg")),
            png: dir.join(format!("{name}.png")),
        };
        self.write_csv(&files.csv)?;
        self.write_svg(&files.svg)?;
        self.write_png(&files.png)?;
        Ok(files)
    }

    /// The x values and measurements of provider index `p`.
    pub(crate) fn column(&self, p: usize) -> impl Iterator<Item = (XVal, Option<Measurement>)> + '_ {
        self.bench.x_vals.iter().zip(&self.cells).map(move |(x, row)| (*x, row[p].as_ref().ok().copied()))
    }
}

/// The same text as [`Report::to_table`].
///
/// ```
/// # use kernel_bench::{perf_report, Benchmark, Measurement};
/// # let bench = Benchmark::new("p").x_names(["N"]).x_vals([1]).line_vals(["a"]).line_names(["A"]);
/// let report = perf_report(&bench, |_| Ok::<_, String>(Measurement::exact(1.0))).unwrap();
/// assert_eq!(report.to_string(), report.to_table());
/// ```
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_table())
    }
}

/// One CSV field, quoted when it contains a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), BenchError> {
    std::fs::write(path, bytes).map_err(|e| BenchError::io(path, e))
}
