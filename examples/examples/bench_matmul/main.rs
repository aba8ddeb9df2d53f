//! The seeds' matmul benchmark on a GPU: our kernel (with and without the fused LeakyReLU)
//! against cuBLAS (with and without a separate LeakyReLU kernel), in TFLOPS.
//!
//! ```text
//! bench_matmul [--quick] [--out DIR] [--square-only | --nonsquare-only] [--sizes 512,1024,...]
//!              [--warmup-ms 25] [--rep-ms 100] [--no-flush] [--sequential] [--progress]
//!              [--triton-kernels DIR] [--launch-overhead] [--layout nn|nt|tn|tt] [--persistent]
//!              [--shapes MxNxK,...] [--no-tma]
//! ```
//!
//! `--shapes 4096x4096x4000,...` times these shapes instead of the squares and the non-square
//! set. `--no-tma` builds no tensor maps (`Settings::tma`): sm_90a copies the operands with
//! `cp.async`. `--persistent` adds the provider `ours-persistent`: the persistent matmul
//! (`examples::matmul_persistent`, Triton's tutorial 09), one program per multiprocessor.
//!
//! `--layout` makes A and/or B transposed views (`t`: the transpose of a contiguous tensor, as
//! `nn.Linear` stores its weight); every provider gets the same views (Triton's exported
//! kernels must come from `triton_matmul_bench.py --layout` with the same layout: a kernel is
//! used only with the strides it was specialized for).
//!
//! Square sizes 256..=8192 step 256 (`--quick`: 256, 512, 1024, 2048, 4096), then non-square
//! shapes (tall-skinny, K not a multiple of the block size, ...). Every point gets fresh
//! random f16 inputs and is checked against cuBLAS (f16 tolerances) before it is timed with
//! Triton's do_bench method (CUDA events, L2 flushed, 25 ms warm-up and 100 ms of
//! repetitions per provider); TFLOPS come from the median. The providers of a point are
//! timed together with their calls interleaved
//! (`kernel_runtime::testing::do_bench_gpu_interleaved`), so that each sees the same GPU
//! clock: after the host-side checks the GPU is idle, and an H100 timed after an idle spell
//! runs above the clock it holds once at its power limit, which favours whichever provider
//! is timed first (BENCHMARKS.md). `--sequential` times them one
//! after the other instead (`do_bench_gpu` per provider, Triton's `perf_report` order).
//! Autotuning happens during the check, so it is not timed (`KERNEL_PRINT_AUTOTUNING=1`
//! shows it).
//!
//! `--triton-kernels DIR` adds Triton's own kernels (the cubins its autotuner chose on this GPU,
//! exported by `scripts/triton_matmul_bench.py --export-kernels DIR`) as providers `triton` and
//! `triton+relu`, loaded and launched in this process (see `triton.rs`): checked and timed like
//! the others, interleaved with them, against the same cuBLAS.
//!
//! `--launch-overhead` measures, instead, the host time of one call of each provider at each
//! square size (2000 calls queued back to back without waiting, after a warm-up; then the
//! device is synchronized): what a caller pays per launch when the GPU keeps up
//! (`matmul-launch-overhead.csv`).
//!
//! Output: tables on stdout; `matmul-performance.{csv,svg,png}`,
//! `matmul-nonsquare.{csv,svg,png}`, `matmul-points.csv` (every measurement with its
//! statistics and check) and `matmul-summary.txt` (geometric-mean ratios) in `--out`
//! (default `target/bench`). Without a GPU it says so and exits successfully.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use examples::activation::leaky_relu_inplace;
use examples::matmul::{leaky_relu, matmul_into};
use examples::matmul_persistent::matmul_persistent_into;
use kernel_bench::{flops_matmul, perf_report, Benchmark, Color, LineStyle, Measurement, Report};
use kernel_runtime::baseline::{cublas_available, cublas_matmul_f16};
use kernel_runtime::testing::{assert_close, do_bench_gpu, do_bench_gpu_interleaved, is_close, matmul_ref_f64, BenchFn, BenchOptions, BenchResult, Tolerance};
use kernel_runtime::{f16, DTypeKind, Device, Tensor};

mod triton;

/// Where `c` and cuBLAS's output `cublas` differ beyond the f16 tolerance, decides which is
/// right: each such element (the first `REFEREE_MAX`) is computed in float64 on the host, one
/// row of A times one column of B, then `act`. cuBLAS accumulates in another order than our
/// kernel and is no float64 reference. `Ok`: `c` is within the tolerance of every float64 value
/// (and by how much cuBLAS misses them); `Err`: where `c` is wrong.
fn referee(c: &Tensor<f16>, cublas: &[f64], a: &Tensor<f16>, b: &Tensor<f16>, act: fn(f64) -> f64) -> std::result::Result<String, String> {
    const REFEREE_MAX: usize = 10_000;
    let tol = Tolerance::for_dtype(DTypeKind::F16);
    let host = |t: &Tensor<f16>| t.try_to_f64_vec().map_err(|e| e.to_string());
    let (got, av, bv) = (host(c)?, host(a)?, host(b)?);
    let (k, n) = (a.shape()[1], b.shape()[1]);
    let (mut differ, mut cublas_err, mut wrong) = (0usize, 0f64, Vec::new());
    for (i, (&g, &r)) in got.iter().zip(cublas).enumerate() {
        if is_close(g, r, tol.atol, tol.rtol) {
            continue;
        }
        differ += 1;
        if differ > REFEREE_MAX {
            continue;
        }
        let (row, col) = (i / n, i % n);
        let exact = act((0..k).map(|j| av[row * k + j] * bv[j * n + col]).sum());
        cublas_err = cublas_err.max((r - exact).abs());
        if !is_close(g, exact, tol.atol, tol.rtol) {
            wrong.push((row, col, g, exact));
        }
    }
    let judged = if differ > REFEREE_MAX { format!("the first {REFEREE_MAX} of {differ}") } else { differ.to_string() };
    match wrong.first() {
        None => Ok(format!("ok ({judged} elements differ from cuBLAS, which misses their float64 values by up to {cublas_err:e})")),
        Some((r, col, g, x)) => Err(format!("{} of {judged} are outside the tolerance of their float64 value too, e.g. [{r}, {col}]: {g} instead of {x}", wrong.len())),
    }
}

/// A provider: (value, label, style).
type Provider = (&'static str, &'static str, (Color, LineStyle));

/// Providers, in the seeds' order.
const PROVIDERS: [Provider; 4] = [
    ("cublas", "cuBLAS", (Color::GREEN, LineStyle::Solid)),
    ("cublas+relu", "cuBLAS (+ separate LeakyReLU)", (Color::GREEN, LineStyle::Dashed)),
    ("ours", "Ours", (Color::BLUE, LineStyle::Solid)),
    ("ours+relu", "Ours (+ fused LeakyReLU)", (Color::BLUE, LineStyle::Dashed)),
];

/// Triton's exported kernels, with `--triton-kernels`.
const TRITON_PROVIDERS: [Provider; 2] = [
    ("triton", "Triton (same process)", (Color::RED, LineStyle::Solid)),
    ("triton+relu", "Triton (+ fused LeakyReLU, same process)", (Color::RED, LineStyle::Dashed)),
];

/// The persistent matmul, with `--persistent`.
const PERSISTENT_PROVIDER: Provider = ("ours-persistent", "Ours (persistent, tutorial 09)", (Color::CYAN, LineStyle::Solid));

/// Non-square shapes (M, N, K) and what each exercises.
const NONSQUARE: [(usize, usize, usize, &str); 7] = [
    (8192, 8192, 512, "short K (outer-product-like)"),
    (4096, 4096, 4000, "K not a multiple of the block size"),
    (16384, 1024, 1024, "tall A"),
    (1024, 16384, 1024, "wide B"),
    (8192, 1024, 8192, "long K, narrow N"),
    (4000, 4000, 4000, "no dimension a multiple of 64"),
    (3000, 5000, 1000, "ragged M and N"),
];

struct Args {
    quick: bool,
    out: PathBuf,
    square: bool,
    nonsquare: bool,
    sizes: Option<Vec<usize>>,
    opts: BenchOptions,
    sequential: bool,
    progress: bool,
    triton: Option<PathBuf>,
    launch_overhead: bool,
    /// A and B each a transposed view (`--layout tn`, `nt`, `tt`).
    layout: (bool, bool),
    /// Adds the persistent matmul (`--persistent`).
    persistent: bool,
    /// `--shapes MxNxK,...`: these shapes instead of the non-square set (and no squares).
    shapes: Option<Vec<(usize, usize, usize)>>,
}

const USAGE: &str = "usage: bench_matmul [--quick] [--out DIR] [--square-only | --nonsquare-only] \
                     [--sizes 512,1024,...] [--warmup-ms MS] [--rep-ms MS] [--no-flush] [--sequential] [--progress] [--triton-kernels DIR] [--launch-overhead] [--layout nn|nt|tn|tt] [--persistent] [--shapes MxNxK,...] [--no-tma]";

fn parse_args() -> Result<Args> {
    let mut a = Args {
        quick: false,
        out: PathBuf::from("target/bench"),
        square: true,
        nonsquare: true,
        sizes: None,
        opts: BenchOptions::default(),
        sequential: false,
        progress: false,
        triton: None,
        launch_overhead: false,
        layout: (false, false),
        persistent: false,
        shapes: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--out" => a.out = PathBuf::from(value("--out")?),
            "--square-only" => a.nonsquare = false,
            "--nonsquare-only" => a.square = false,
            "--sizes" => {
                let v = value("--sizes")?;
                let sizes = v.split(',').map(|s| s.trim().parse::<usize>()).collect::<Result<Vec<_>, _>>();
                a.sizes = Some(sizes.with_context(|| format!("--sizes {v}: expected comma-separated integers"))?);
            }
            "--shapes" => {
                let v = value("--shapes")?;
                let parse = |t: &str| -> Option<(usize, usize, usize)> {
                    let d: Vec<usize> = t.trim().split('x').map(|x| x.parse().ok()).collect::<Option<_>>()?;
                    match d[..] {
                        [m, n, k] => Some((m, n, k)),
                        _ => None,
                    }
                };
                let shapes = v.split(',').map(parse).collect::<Option<Vec<_>>>();
                a.shapes = Some(shapes.with_context(|| format!("--shapes {v}: expected comma-separated MxNxK"))?);
                a.square = false;
            }
            "--warmup-ms" => a.opts.warmup_ms = value("--warmup-ms")?.parse()?,
            "--rep-ms" => a.opts.rep_ms = value("--rep-ms")?.parse()?,
            "--no-flush" => a.opts.flush_l2 = false,
            "--sequential" => a.sequential = true,
            "--progress" => a.progress = true,
            "--launch-overhead" => a.launch_overhead = true,
            "--persistent" => a.persistent = true,
            "--no-tma" => {
                // Before the first launch: sm_90a then copies operands with `cp.async`.
                let mut settings = kernel_runtime::Settings::from_env();
                settings.tma = false;
                settings.install().map_err(|e| anyhow::anyhow!("--no-tma: {e}"))?;
            }
            "--triton-kernels" => a.triton = Some(PathBuf::from(value("--triton-kernels")?)),
            "--layout" => {
                a.layout = match value("--layout")?.as_str() {
                    "nn" => (false, false),
                    "nt" => (false, true),
                    "tn" => (true, false),
                    "tt" => (true, true),
                    other => bail!("--layout {other}: expected nn, nt, tn or tt\n{USAGE}"),
                }
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    Ok(a)
}

/// LeakyReLU on the host, as the kernels compute it.
fn leaky(x: f64) -> f64 {
    if x >= 0.0 {
        x
    } else {
        0.01 * x
    }
}

/// The inputs of one shape and the result of checking each provider on them.
struct Point {
    /// Triton's kernels for this shape (without and with LeakyReLU), when exported. First, so
    /// that they are dropped (waiting for the stream) before the tensors they use.
    triton: [Option<triton::Loaded>; 2],
    a: Tensor<f16>,
    b: Tensor<f16>,
    c: Tensor<f16>,
    /// Per provider: `Ok(note)` when it matched the reference, or why it did not.
    checks: Vec<std::result::Result<String, String>>,
    /// Per provider, when the point's providers were timed together: its timing.
    times: Option<Vec<std::result::Result<BenchResult, String>>>,
}

/// One timed measurement, for `matmul-points.csv`.
struct Row {
    set: &'static str,
    shape: (usize, usize, usize),
    provider: &'static str,
    result: std::result::Result<BenchResult, String>,
    check: String,
}

struct Bench {
    dev: Device,
    providers: Vec<Provider>,
    triton: Option<triton::TritonKernels>,
    cublas: bool,
    opts: BenchOptions,
    sequential: bool,
    rows: Vec<Row>,
    layout: (bool, bool),
}

impl Bench {
    /// Fresh inputs for (m, n, k) and each provider's check against cuBLAS (or, without
    /// cuBLAS, a float64 reference on the host for small shapes).
    fn prepare(&self, (m, n, k): (usize, usize, usize), seed: u64) -> Result<Point> {
        // A transposed operand is the transposed view of a contiguous tensor.
        let operand = |rows: usize, cols: usize, transposed: bool, seed: u64| -> Result<Tensor<f16>> {
            Ok(if transposed { Tensor::<f16>::randn(&self.dev, &[cols, rows], seed)?.t() } else { Tensor::<f16>::randn(&self.dev, &[rows, cols], seed)? })
        };
        let a = operand(m, k, self.layout.0, seed)?;
        let b = operand(k, n, self.layout.1, seed + 1)?;
        let c = Tensor::<f16>::zeros(&self.dev, &[m, n])?;
        let reference: Option<Vec<f64>> = if self.cublas {
            cublas_matmul_f16(&a, &b, &c)?;
            Some(c.try_to_f64_vec()?)
        } else if (m * n * k) as f64 <= 2f64.powi(31) {
            Some(matmul_ref_f64(&a.try_to_f64_vec()?, &b.try_to_f64_vec()?, m, n, k))
        } else {
            None
        };
        let reference_relu: Option<Vec<f64>> = reference.as_ref().map(|r| r.iter().map(|&x| leaky(x)).collect());
        // Against cuBLAS, an output that differs is wrong only where float64 says so (`referee`).
        // `relu`: the output has the LeakyReLU applied.
        let check = |run: &dyn Fn(&Tensor<f16>) -> Result<()>, relu: bool| -> std::result::Result<String, String> {
            c.try_fill(f16::NAN).map_err(|e| e.to_string())?;
            run(&c).map_err(|e| format!("{e:#}"))?;
            let (expected, act): (_, fn(f64) -> f64) = if relu { (&reference_relu, leaky) } else { (&reference, |x| x) };
            match expected {
                Some(exp) => match assert_close(&c, exp) {
                    Ok(()) => Ok("ok".to_string()),
                    Err(e) if self.cublas => referee(&c, exp, &a, &b, act).map_err(|r| format!("wrong result: {e}; {r}")),
                    Err(e) => Err(format!("wrong result: {e}")),
                },
                None => Ok("unchecked (no cuBLAS, too large for the host reference)".into()),
            }
        };
        let load_triton = |activation: &str| -> std::result::Result<triton::Loaded, String> {
            let kernels = self.triton.as_ref().ok_or("no --triton-kernels")?;
            let e = kernels.find((m, n, k), activation).ok_or_else(|| format!("no exported Triton kernel for {m}x{n}x{k} ({activation})"))?;
            triton::Loaded::new(&self.dev, e, &a, &b, &c).map_err(|e| format!("{e:#}"))
        };
        let triton = [load_triton("none"), load_triton("leaky_relu")];
        let mut checks = Vec::new();
        for &(provider, _, _) in &self.providers {
            let r = match provider {
                "cublas" if self.cublas => Ok("reference".to_string()),
                "cublas" | "cublas+relu" if !self.cublas => Err(cublas_available().unwrap_err().to_string()),
                "cublas+relu" => check(
                    &|c| {
                        cublas_matmul_f16(&a, &b, c)?;
                        Ok(leaky_relu_inplace(c)?)
                    },
                    true,
                ),
                "ours" => check(&|c| Ok(matmul_into(&a, &b, c, None)?), false),
                "ours+relu" => check(&|c| Ok(matmul_into(&a, &b, c, Some(leaky_relu))?), true),
                "ours-persistent" => check(&|c| Ok(matmul_persistent_into(&a, &b, c)?), false),
                // Triton's kernels write into the point's `c`, which `check` fills with NaN first.
                "triton" | "triton+relu" => {
                    let relu = provider == "triton+relu";
                    match &triton[usize::from(relu)] {
                        Ok(t) => check(&|_| t.call(), relu).map(|ok| format!("{ok} ({})", t.config)),
                        Err(e) => Err(e.clone()),
                    }
                }
                _ => unreachable!(),
            };
            checks.push(r);
        }
        let [t0, t1] = triton;
        Ok(Point { a, b, c, checks, times: None, triton: [t0.ok(), t1.ok()] })
    }

    /// One call of `provider` on `p`, queued on the device's stream.
    fn call(p: &Point, provider: &str) -> Result<()> {
        let (a, b, c) = (&p.a, &p.b, &p.c);
        match provider {
            "cublas" => Ok(cublas_matmul_f16(a, b, c)?),
            "cublas+relu" => {
                cublas_matmul_f16(a, b, c)?;
                Ok(leaky_relu_inplace(c)?)
            }
            "ours" => Ok(matmul_into(a, b, c, None)?),
            "ours+relu" => Ok(matmul_into(a, b, c, Some(leaky_relu))?),
            "ours-persistent" => Ok(matmul_persistent_into(a, b, c)?),
            "triton" | "triton+relu" => match &p.triton[usize::from(provider == "triton+relu")] {
                Some(t) => t.call(),
                None => bail!("no Triton kernel loaded for this point"),
            },
            other => bail!("unknown provider {other}"),
        }
    }

    /// Times `provider` on `p` alone.
    fn time(&self, p: &Point, provider: &str) -> Result<BenchResult> {
        do_bench_gpu(&self.dev, || Self::call(p, provider), &self.opts)
    }

    /// Times every provider of `p` whose check passed, their calls interleaved; the others
    /// get why they were not timed.
    fn time_all(&self, p: &Point) -> Vec<std::result::Result<BenchResult, String>> {
        let timed: Vec<&str> = self.providers.iter().zip(&p.checks).filter(|(_, c)| c.is_ok()).map(|((v, _, _), _)| *v).collect();
        let mut calls: Vec<_> = timed.iter().map(|&v| move || Self::call(p, v)).collect();
        let mut fs: Vec<BenchFn<'_, anyhow::Error>> = calls.iter_mut().map(|f| f as BenchFn<'_, anyhow::Error>).collect();
        // One result per timed provider, in order.
        let mut results = do_bench_gpu_interleaved(&self.dev, &mut fs, &self.opts).map(Vec::into_iter).map_err(|e| format!("{e:#}"));
        p.checks
            .iter()
            .map(|check| match (check, &mut results) {
                (Err(e), _) => Err(format!("not timed: {e}")),
                (Ok(_), Ok(timed)) => timed.next().ok_or_else(|| "no timing returned".to_string()),
                (Ok(_), Err(e)) => Err(e.clone()),
            })
            .collect()
    }

    /// Host microseconds per call of each provider whose check passed on `p` (`calls` calls
    /// queued without waiting, after `calls / 10` warm-up calls), and the wall time per call
    /// once the device has finished them.
    fn launch_overhead(&self, p: &Point, calls: usize) -> Vec<std::result::Result<(f64, f64), String>> {
        self.providers
            .iter()
            .zip(&p.checks)
            .map(|(&(provider, _, _), check)| {
                check.as_ref().map_err(|e| format!("not run: {e}"))?;
                let run = |n: usize| -> Result<()> {
                    for _ in 0..n {
                        Self::call(p, provider)?;
                    }
                    Ok(())
                };
                run(calls / 10).map_err(|e| format!("{e:#}"))?;
                self.dev.synchronize().map_err(|e| e.to_string())?;
                let start = std::time::Instant::now();
                run(calls).map_err(|e| format!("{e:#}"))?;
                let host = start.elapsed().as_secs_f64() * 1e6 / calls as f64;
                self.dev.synchronize().map_err(|e| e.to_string())?;
                Ok((host, start.elapsed().as_secs_f64() * 1e6 / calls as f64))
            })
            .collect()
    }

    /// Runs every provider on `shapes` (x value `x(i)` for shape `i`) as one report.
    fn sweep(
        &mut self,
        set: &'static str,
        plot_name: &str,
        x_name: &str,
        xs: Vec<i64>,
        shapes: &[(usize, usize, usize)],
        progress: bool,
    ) -> Result<Report> {
        let names: Vec<&str> = if set == "square" { vec!["M", "N", "K"] } else { vec![x_name] };
        let mut bench =
            Benchmark::new(plot_name).x_names(names).x_vals(xs).line_arg("provider").ylabel("TFLOPS").progress(progress);
        for &(val, name, style) in &self.providers {
            bench = bench.line(val, name, style);
        }
        let current: RefCell<Option<(usize, std::result::Result<Point, String>)>> = RefCell::new(None);
        let rows = RefCell::new(Vec::new());
        let this = &*self;
        let report = perf_report(&bench, |pt| -> std::result::Result<Measurement, String> {
            let i = pt.x_index();
            let shape = shapes[i];
            let mut cur = current.borrow_mut();
            if cur.as_ref().is_none_or(|(j, _)| *j != i) {
                // Free the previous inputs before allocating new ones.
                *cur = None;
                eprintln!("{set} {}x{}x{}: checking against the reference", shape.0, shape.1, shape.2);
                let mut prepared = this.prepare(shape, 1000 + 7 * i as u64).map_err(|e| format!("{e:#}"));
                if let (Ok(point), false) = (&mut prepared, this.sequential) {
                    point.times = Some(this.time_all(point));
                }
                *cur = Some((i, prepared));
            }
            let Some((_, prepared)) = cur.as_ref() else { unreachable!() };
            let point = prepared.as_ref().map_err(Clone::clone)?;
            let provider = pt.provider();
            let index = this.providers.iter().position(|(v, _, _)| *v == provider).unwrap_or(0);
            let provider_static = this.providers[index].0;
            let check = point.checks[index].clone();
            let result = match (&point.times, &check) {
                (Some(times), _) => times[index].clone(),
                (None, Ok(_)) => this.time(point, provider).map_err(|e| format!("{e:#}")),
                (None, Err(e)) => Err(format!("not timed: {e}")),
            };
            rows.borrow_mut().push(Row {
                set,
                shape,
                provider: provider_static,
                result: result.clone(),
                check: check.clone().unwrap_or_else(|e| e),
            });
            let r = result?;
            let (m, n, k) = shape;
            Ok(Measurement::from_ms(r.median_ms, r.min_ms, r.max_ms, |ms| flops_matmul(m, n, k, ms)))
        })?;
        self.rows.extend(rows.into_inner());
        Ok(report)
    }
}

/// `0.93x` or `n/a (why)`.
fn ratio(report: &Report, num: &str, den: &str, lo: i64, hi: i64) -> String {
    match report.geomean_ratio(num, den, lo..=hi) {
        Ok(r) => format!("{r:.3}x"),
        Err(e) => format!("n/a ({e})"),
    }
}

fn points_csv(rows: &[Row]) -> String {
    let mut s = String::from("set,M,N,K,provider,median_ms,min_ms,max_ms,mean_ms,p20_ms,p80_ms,reps,tflops,check,error\n");
    for r in rows {
        let (m, n, k) = r.shape;
        let quote = |t: &str| format!("\"{}\"", t.replace('"', "'").replace('\n', " "));
        match &r.result {
            Ok(b) => {
                let _ = writeln!(
                    s,
                    "{},{m},{n},{k},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{},{:.3},{},",
                    r.set,
                    r.provider,
                    b.median_ms,
                    b.min_ms,
                    b.max_ms,
                    b.mean_ms,
                    b.p20_ms,
                    b.p80_ms,
                    b.reps,
                    flops_matmul(m, n, k, b.median_ms),
                    quote(&r.check)
                );
            }
            Err(e) => {
                let _ = writeln!(s, "{},{m},{n},{k},{},,,,,,,,,{},{}", r.set, r.provider, quote(&r.check), quote(e));
            }
        }
    }
    s
}

fn main() -> Result<()> {
    examples::logging::init_logging();
    let args = parse_args()?;
    let dev = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("bench_matmul: no usable GPU ({e}); this benchmark needs one, nothing to do");
            return Ok(());
        }
    };
    println!("device: {}", dev.describe());
    let cublas = match cublas_available() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("warning: {e}; the cuBLAS lines are skipped and results are checked against a host reference (small shapes only)");
            false
        }
    };
    println!(
        "timing: {} (CUDA events, warm-up {} ms, repetitions {} ms, L2 flush {}), TFLOPS from the median",
        if args.sequential { "do_bench_gpu, providers one after the other" } else { "do_bench_gpu_interleaved, the providers of a point interleaved" },
        args.opts.warmup_ms,
        args.opts.rep_ms,
        if args.opts.flush_l2 { "on" } else { "off" }
    );
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut providers = PROVIDERS.to_vec();
    if args.persistent {
        providers.push(PERSISTENT_PROVIDER);
    }
    let triton = match &args.triton {
        Some(dir) => {
            let kernels = triton::TritonKernels::open(dir)?;
            println!("triton: {} kernels exported by Triton {} from {}", kernels.kernels.len(), kernels.triton_version, dir.display());
            providers.extend(TRITON_PROVIDERS);
            Some(kernels)
        }
        None => None,
    };
    let with_triton = triton.is_some();
    let mut bench = Bench { dev, providers, triton, cublas, opts: args.opts, sequential: args.sequential, rows: Vec::new(), layout: args.layout };
    let mut summary = String::new();

    if args.launch_overhead {
        let sizes = args.sizes.clone().unwrap_or_else(|| vec![256, 512, 1024, 2048]);
        let mut csv = String::from("M,N,K,provider,host_us_per_call,wall_us_per_call,error\n");
        println!("\nlaunch overhead: host µs per call (2000 calls queued back to back) / wall µs per call");
        for (i, &s) in sizes.iter().enumerate() {
            eprintln!("square {s}x{s}x{s}: checking against the reference");
            let p = bench.prepare((s, s, s), 1000 + 7 * i as u64)?;
            let mut line = format!("  {s:>5}:");
            for (&(provider, _, _), r) in bench.providers.iter().zip(bench.launch_overhead(&p, 2000)) {
                match r {
                    Ok((host, wall)) => {
                        let _ = write!(line, "  {provider} {host:.1} / {wall:.1}");
                        let _ = writeln!(csv, "{s},{s},{s},{provider},{host:.3},{wall:.3},");
                    }
                    Err(e) => {
                        let _ = write!(line, "  {provider} n/a");
                        let _ = writeln!(csv, "{s},{s},{s},{provider},,,\"{}\"", e.replace('"', "'"));
                    }
                }
            }
            println!("{line}");
        }
        let path = args.out.join("matmul-launch-overhead.csv");
        std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
        return Ok(());
    }

    if args.square {
        let sizes: Vec<usize> = match (&args.sizes, args.quick) {
            (Some(s), _) => s.clone(),
            (None, true) => vec![256, 512, 1024, 2048, 4096],
            (None, false) => (1..=32).map(|i| 256 * i).collect(),
        };
        let shapes: Vec<(usize, usize, usize)> = sizes.iter().map(|&s| (s, s, s)).collect();
        let xs = sizes.iter().map(|&s| s as i64).collect();
        let report = bench.sweep("square", "matmul-performance", "M", xs, &shapes, args.progress)?;
        println!("\n{}", report.to_table());
        let files = report.save(&args.out)?;
        println!("wrote {}, {}, {}", files.csv.display(), files.svg.display(), files.png.display());
        let _ = writeln!(summary, "square matmul, geometric-mean TFLOPS ratios:");
        for (lo, hi) in [(2048, 8192), (256, 1024), (256, 8192)] {
            let _ = writeln!(
                summary,
                "  {lo}-{hi}: ours / cuBLAS = {}, ours+fused LeakyReLU / cuBLAS+separate LeakyReLU = {}, ours+fused / cuBLAS (no activation) = {}",
                ratio(&report, "ours", "cublas", lo, hi),
                ratio(&report, "ours+relu", "cublas+relu", lo, hi),
                ratio(&report, "ours+relu", "cublas", lo, hi),
            );
            if with_triton {
                let _ = writeln!(
                    summary,
                    "  {lo}-{hi}: Triton (same process) / cuBLAS = {}, ours / Triton = {}, Triton+fused / cuBLAS+separate = {}, ours+fused / Triton+fused = {}",
                    ratio(&report, "triton", "cublas", lo, hi),
                    ratio(&report, "ours", "triton", lo, hi),
                    ratio(&report, "triton+relu", "cublas+relu", lo, hi),
                    ratio(&report, "ours+relu", "triton+relu", lo, hi),
                );
            }
        }
    }

    if args.nonsquare {
        let cases: Vec<_> = match &args.shapes {
            Some(shapes) => shapes.iter().map(|&(m, n, k)| (m, n, k, "--shapes")).collect(),
            None if args.quick => NONSQUARE[..3].to_vec(),
            None => NONSQUARE.to_vec(),
        };
        let shapes: Vec<(usize, usize, usize)> = cases.iter().map(|&(m, n, k, _)| (m, n, k)).collect();
        let xs = (1..=cases.len() as i64).collect();
        let report = bench.sweep("nonsquare", "matmul-nonsquare", "case", xs, &shapes, args.progress)?;
        println!("\nnon-square cases:");
        for (i, (m, n, k, what)) in cases.iter().enumerate() {
            println!("  case {}: M={m} N={n} K={k} ({what})", i + 1);
        }
        println!("\n{}", report.to_table());
        let files = report.save(&args.out)?;
        println!("wrote {}, {}, {}", files.csv.display(), files.svg.display(), files.png.display());
        let last = cases.len() as i64;
        let _ = writeln!(
            summary,
            "non-square matmul ({} cases), geometric-mean TFLOPS ratios: ours / cuBLAS = {}, ours+fused / cuBLAS+separate = {}",
            cases.len(),
            ratio(&report, "ours", "cublas", 1, last),
            ratio(&report, "ours+relu", "cublas+relu", 1, last),
        );
        if with_triton {
            let _ = writeln!(
                summary,
                "  Triton (same process) / cuBLAS = {}, ours / Triton = {}",
                ratio(&report, "triton", "cublas", 1, last),
                ratio(&report, "ours", "triton", 1, last),
            );
        }
    }

    let points = args.out.join("matmul-points.csv");
    std::fs::write(&points, points_csv(&bench.rows)).with_context(|| format!("writing {}", points.display()))?;
    let summary_path = args.out.join("matmul-summary.txt");
    std::fs::write(&summary_path, &summary).with_context(|| format!("writing {}", summary_path.display()))?;
    println!("\n{summary}wrote {} and {}", points.display(), summary_path.display());
    let failed: Vec<&Row> = bench.rows.iter().filter(|r| r.result.is_err()).collect();
    if !failed.is_empty() {
        println!("\n{} point(s) failed:", failed.len());
        for r in failed {
            let (m, n, k) = r.shape;
            println!("  {} {m}x{n}x{k} {}: {}", r.set, r.provider, r.result.as_ref().err().map_or("", String::as_str));
        }
        std::process::exit(1);
    }
    Ok(())
}
