//! Memory-bound kernels on a GPU, in GB/s against the device's copy bandwidth: vector add
//! (f32), softmax (f32 and f16: the fused kernel up to 16384 columns, the online kernel beyond,
//! and the online kernel alone at a few fused shapes to compare), and the layer norm forward
//! pass (f16). `scripts/triton_memory_bench.py` measures Triton's tutorial kernels and PyTorch
//! on the same shapes; `scripts/memory_compare.py` joins the two CSVs.
//!
//! ```text
//! bench_memory [--only vector_add,softmax,layer_norm] [--cols N,N,...] [--out DIR]
//! ```
//!
//! For each kernel and shape: inputs of random values, the output poisoned with NaN, one run
//! checked against a float64 reference (on the first and last rows of the larger shapes), the
//! output poisoned again, then timed with `do_bench_gpu` (L2 flushed before every call, 25 ms of
//! warm-up, 100 ms of repetitions, median) and checked once more (the timed runs wrote it).
//! Bytes moved are counted as Triton's tutorials count them: vector add `3 * n * 4`, softmax
//! `2 * rows * cols * size` (the online kernel reads each row twice, which is not counted),
//! layer norm `(2 * M * N + 2 * N) * 2` (x read, y written, w and b read; the f32 mean and
//! rstd, 8 bytes a row, left out). The copy bandwidth is a device-to-device `cuMemcpy` of
//! 1 GiB, counted as `2 * 1 GiB` (read and write), what `torch.Tensor.copy_` does.
//!
//! `--cols` replaces the softmax and layer-norm shapes with rows of 4096 x N for each N given
//! (softmax in f32 and f16: the fused kernel, or the online one beyond 16384 columns): rows of
//! any length, such as ones not a multiple of 8, whose starts are not 16-byte aligned. Vector
//! add keeps its sizes.
//!
//! Output: a table on stdout and, with `--out DIR`, `DIR/memory.csv` (columns
//! `kernel,dtype,shape,ours_ms,ours_gbps,copy_gbps,ratio_to_copy`). Without a GPU it says so
//! and exits successfully.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, ensure, Context, Result};
use examples::layer_norm::layer_norm_f16_into;
use examples::softmax::{softmax_into, softmax_online_into, SoftmaxDtype};
use examples::vector_add::add_kernel;
use kernel_runtime::testing::{do_bench_gpu, BenchOptions};
use kernel_runtime::{cdiv, f16, DType, Device, Tensor};

const USAGE: &str = "usage: bench_memory [--only vector_add,softmax,layer_norm] [--cols N,N,...] [--out DIR]";
const KERNELS: [&str; 3] = ["vector_add", "softmax", "layer_norm"];

/// One measured point.
struct Point {
    kernel: &'static str,
    dtype: &'static str,
    shape: String,
    ms: f64,
    gbps: f64,
}

/// `n` values uniform in `[-scale, scale)` from a fast generator (xorshift64*; the inputs of a
/// 1 GiB vector are made on the host, where `Tensor::randn` would take seconds).
fn values<T: DType>(n: usize, seed: u64, scale: f64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            T::from_f64(scale * (2.0 * u - 1.0))
        })
        .collect()
}

fn tensor<T: DType>(dev: &Device, shape: &[usize], seed: u64, scale: f64) -> Result<Tensor<T>> {
    Ok(Tensor::from_vec(dev, shape, values(shape.iter().product(), seed, scale))?)
}

/// The rows to check of a `rows`-row result: all of a small one, else the first and last 16.
fn checked_rows(rows: usize) -> Vec<(usize, usize)> {
    if rows <= 64 {
        vec![(0, rows)]
    } else {
        vec![(0, 16), (rows - 16, 16)]
    }
}

/// Largest `|got - want| / (atol + rtol |want|)`; NaN anywhere (a value not written) is infinite.
fn worst(got: &[f64], want: &[f64], atol: f64, rtol: f64) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| if g.is_nan() || w.is_nan() { f64::INFINITY } else { (g - w).abs() / (atol + rtol * w.abs()) })
        .fold(0.0, f64::max)
}

fn gbps(bytes: f64, ms: f64) -> f64 {
    bytes / (ms * 1e-3) / 1e9
}

/// Times `f` (which must queue its work on `dev`'s stream) and returns the median in ms.
fn time(dev: &Device, opts: &BenchOptions, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    Ok(do_bench_gpu(dev, &mut f, opts)?.median_ms)
}

/// Device-to-device copy bandwidth of a 1 GiB buffer, in GB/s (read + write).
fn copy_bandwidth(dev: &Device, opts: &BenchOptions) -> Result<Point> {
    let bytes = 1usize << 30;
    let stream = dev.cuda_stream().context("the copy needs a CUDA device")?;
    let src = stream.alloc_zeros::<u8>(bytes)?;
    let mut dst = stream.alloc_zeros::<u8>(bytes)?;
    let ms = time(dev, opts, || Ok(stream.memcpy_dtod(&src, &mut dst)?))?;
    Ok(Point { kernel: "copy", dtype: "u8", shape: bytes.to_string(), ms, gbps: gbps(2.0 * bytes as f64, ms) })
}

fn vector_add(dev: &Device, opts: &BenchOptions, n: usize) -> Result<Point> {
    let x = tensor::<f32>(dev, &[n], 1, 4.0)?;
    let y = tensor::<f32>(dev, &[n], 2, 4.0)?;
    let out = Tensor::<f32>::full(dev, &[n], f32::NAN)?;
    let ni = i32::try_from(n)?;
    let run = || add_kernel::launch(|m: &add_kernel::Meta| (cdiv(ni, m.BLOCK_SIZE),), &x, &y, &out, ni, 1024);
    // f32 addition is correctly rounded: the result is exact to the bit.
    let check = || -> Result<()> {
        let (xv, yv, ov) = (x.try_to_vec()?, y.try_to_vec()?, out.try_to_vec()?);
        let bad = (0..n).find(|&i| (xv[i] + yv[i]).to_bits() != ov[i].to_bits());
        ensure!(bad.is_none(), "vector_add n = {n}: element {} differs", bad.unwrap_or(0));
        Ok(())
    };
    run()?;
    check()?;
    out.try_fill(f32::NAN)?;
    let ms = time(dev, opts, || Ok(run()?))?;
    check()?;
    Ok(Point { kernel: "vector_add", dtype: "f32", shape: n.to_string(), ms, gbps: gbps(3.0 * 4.0 * n as f64, ms) })
}

/// Row-wise softmax in float64 of `rows` rows of `cols` values.
fn softmax_ref(x: &[f64], cols: usize) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|row| {
            let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
            row.iter().map(move |v| (v - m).exp() / s)
        })
        .collect()
}

fn dtype_name<T: DType>() -> &'static str {
    if T::KIND == f16::KIND {
        "f16"
    } else {
        "f32"
    }
}

fn softmax<T: SoftmaxDtype>(dev: &Device, opts: &BenchOptions, rows: usize, cols: usize, online: bool) -> Result<Point> {
    let x = tensor::<T>(dev, &[rows, cols], 3, 4.0)?;
    let nan = T::from_f64(f64::NAN);
    let out = Tensor::<T>::full(dev, &[rows, cols], nan)?;
    let run = || if online { softmax_online_into(&x, &out) } else { softmax_into(&x, &out) };
    let (atol, rtol) = if T::KIND == f16::KIND { (1e-7, 2e-3) } else { (1e-9, 2e-5) };
    let kernel = if online || cols > examples::softmax::MAX_BLOCK_COLUMNS { "softmax_online" } else { "softmax" };
    let check = || -> Result<()> {
        for (start, len) in checked_rows(rows) {
            let want = softmax_ref(&x.narrow(0, start, len)?.try_to_f64_vec()?, cols);
            let r = worst(&out.narrow(0, start, len)?.try_to_f64_vec()?, &want, atol, rtol);
            ensure!(r <= 1.0, "{kernel} {} {rows}x{cols}: rows {start}..{}: worst error ratio {r}", dtype_name::<T>(), start + len);
        }
        Ok(())
    };
    run()?;
    check()?;
    out.try_fill(nan)?;
    let ms = time(dev, opts, || Ok(run()?))?;
    check()?;
    let bytes = 2.0 * (rows * cols * std::mem::size_of::<T>()) as f64;
    Ok(Point { kernel, dtype: dtype_name::<T>(), shape: format!("{rows}x{cols}"), ms, gbps: gbps(bytes, ms) })
}

fn layer_norm(dev: &Device, opts: &BenchOptions, m: usize, n: usize) -> Result<Point> {
    let eps = 1e-5f32;
    let x = tensor::<f16>(dev, &[m, n], 4, 3.0)?;
    let w = tensor::<f16>(dev, &[n], 5, 1.0)?;
    let b = tensor::<f16>(dev, &[n], 6, 1.0)?;
    let y = Tensor::<f16>::full(dev, &[m, n], f16::NAN)?;
    let mean = Tensor::<f32>::full(dev, &[m], f32::NAN)?;
    let rstd = Tensor::<f32>::full(dev, &[m], f32::NAN)?;
    let run = || layer_norm_f16_into(&x, &w, &b, eps, &y, &mean, &rstd);
    let (wv, bv) = (w.try_to_f64_vec()?, b.try_to_f64_vec()?);
    let check = || -> Result<()> {
        for (start, len) in checked_rows(m) {
            let xv = x.narrow(0, start, len)?.try_to_f64_vec()?;
            let want: Vec<f64> = xv
                .chunks(n)
                .flat_map(|row| {
                    let mu = row.iter().sum::<f64>() / n as f64;
                    let var = row.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n as f64;
                    let rs = 1.0 / (var + f64::from(eps)).sqrt();
                    row.iter().zip(&wv).zip(&bv).map(move |((v, w), b)| (v - mu) * rs * w + b)
                })
                .collect();
            let r = worst(&y.narrow(0, start, len)?.try_to_f64_vec()?, &want, 2e-3, 2e-3);
            ensure!(r <= 1.0, "layer_norm f16 {m}x{n}: rows {start}..{}: worst error ratio {r}", start + len);
            ensure!(mean.try_to_vec()?.iter().chain(&rstd.try_to_vec()?).all(|v| v.is_finite()), "layer_norm f16 {m}x{n}: mean or rstd not written");
        }
        Ok(())
    };
    run()?;
    check()?;
    for t in [&mean, &rstd] {
        t.try_fill(f32::NAN)?;
    }
    y.try_fill(f16::NAN)?;
    let ms = time(dev, opts, || Ok(run()?))?;
    check()?;
    let bytes = 2.0 * (2 * m * n + 2 * n) as f64;
    Ok(Point { kernel: "layer_norm_fwd", dtype: "f16", shape: format!("{m}x{n}"), ms, gbps: gbps(bytes, ms) })
}

fn main() -> Result<()> {
    examples::logging::init_logging();
    let (mut only, mut out): (Vec<String>, Option<PathBuf>) = (KERNELS.iter().map(|k| k.to_string()).collect(), None);
    let mut cols: Option<Vec<usize>> = None;
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--only" => {
                only = value("--only")?.split(',').map(|s| s.trim().to_string()).collect();
                if let Some(k) = only.iter().find(|k| !KERNELS.contains(&k.as_str())) {
                    bail!("--only {k}: expected some of {}\n{USAGE}", KERNELS.join(","));
                }
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--cols" => {
                let list = value("--cols")?;
                let parsed: Result<Vec<usize>, _> = list.split(',').map(|c| c.trim().parse::<usize>()).collect();
                match parsed {
                    Ok(v) if !v.is_empty() && v.iter().all(|&c| c > 0) => cols = Some(v),
                    _ => bail!("--cols {list}: expected positive column counts separated by commas\n{USAGE}"),
                }
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let Ok(dev) = Device::cuda(0) else {
        println!("bench_memory: no CUDA device; nothing to do");
        return Ok(());
    };
    let opts = BenchOptions::default();
    let wants = |k: &str| only.iter().any(|o| o == k);
    let copy = copy_bandwidth(&dev, &opts)?;
    println!("copy bandwidth (device-to-device, 1 GiB): {:.1} GB/s", copy.gbps);
    println!("{:<16} {:>5} {:>12} {:>10} {:>9} {:>8}", "kernel", "dtype", "shape", "ms", "GB/s", "/copy");
    let mut points = vec![];
    let mut report = |p: Point| {
        println!("{:<16} {:>5} {:>12} {:>10.4} {:>9.1} {:>8.3}", p.kernel, p.dtype, p.shape, p.ms, p.gbps, p.gbps / copy.gbps);
        points.push(p);
    };
    if wants("vector_add") {
        for log2 in [20, 22, 24, 26, 28] {
            report(vector_add(&dev, &opts, 1 << log2)?);
        }
    }
    if let Some(cols) = &cols {
        // Rows of 4096 x cols for the softmax and the layer norm.
        for &n in cols {
            if wants("softmax") {
                report(softmax::<f32>(&dev, &opts, 4096, n, false)?);
                report(softmax::<f16>(&dev, &opts, 4096, n, false)?);
            }
            if wants("layer_norm") {
                report(layer_norm(&dev, &opts, 4096, n)?);
            }
        }
    } else if wants("softmax") {
        let fused = [128, 256, 512, 1024, 2048, 4096, 5000, 8192, 16384];
        for &cols in &fused {
            report(softmax::<f32>(&dev, &opts, 4096, cols, false)?);
            report(softmax::<f16>(&dev, &opts, 4096, cols, false)?);
        }
        // The online kernel where the fused one also runs, to compare the two.
        for cols in [4096, 16384] {
            report(softmax::<f32>(&dev, &opts, 4096, cols, true)?);
            report(softmax::<f16>(&dev, &opts, 4096, cols, true)?);
        }
        for cols in [32768, 65536] {
            report(softmax::<f32>(&dev, &opts, 1024, cols, false)?);
            report(softmax::<f16>(&dev, &opts, 1024, cols, false)?);
        }
    }
    if wants("layer_norm") && cols.is_none() {
        for n in [1024, 2048, 4096, 8192] {
            report(layer_norm(&dev, &opts, 4096, n)?);
        }
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut csv = String::from("kernel,dtype,shape,ours_ms,ours_gbps,copy_gbps,ratio_to_copy\n");
        for p in std::iter::once(&copy).chain(&points) {
            let _ = writeln!(csv, "{},{},{},{:.6},{:.2},{:.2},{:.4}", p.kernel, p.dtype, p.shape, p.ms, p.gbps, copy.gbps, p.gbps / copy.gbps);
        }
        let path = dir.join("memory.csv");
        std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
