//! Flash-attention forward on a GPU, in TFLOPS: `examples::attention` (autotuned) at Triton's
//! tutorial shapes, batch 4 and 32 heads, head dimensions 64 and 128, causal and not, sequence
//! lengths 1024 to 16384 (fewer with `--max-ctx`). `scripts/triton_attention_bench.py`
//! measures a Triton kernel written after the tutorial and PyTorch's
//! `scaled_dot_product_attention` on the same shapes; `scripts/attention_compare.py` joins
//! the CSVs.
//!
//! ```text
//! bench_attention [--max-ctx N] [--ctx N,N,...] [--no-tma] [--out DIR]
//! ```
//!
//! `--ctx` times the given sequence lengths instead of the tutorial's powers of two; `--no-tma`
//! builds no tensor maps (`Settings::tma`), so that sm_90a copies the key and value tiles with
//! `cp.async`, to compare the two in one binary.
//!
//! First, every config of the kernel runs once on ragged shapes (sequence lengths 1000 and 77,
//! causal and not, both head dimensions) and is checked against a float64 reference on every
//! row. Then for each shape: random inputs in `[-1, 1)`, the output poisoned with NaN, one run checked
//! against a float64 reference on 32 query rows of the first and last heads, the output poisoned
//! again, then timed with `do_bench_gpu` (L2 flushed before every call, 25 ms of warm-up,
//! 100 ms of repetitions, median) and checked once more. FLOPs are counted as the tutorial
//! counts them: `4 * batch * heads * n^2 * head_dim`, half of it when causal.
//!
//! Output: a table on stdout and, with `--out DIR`, `DIR/attention.csv` (columns
//! `head_dim,causal,n_ctx,ours_ms,ours_tflops`). Without a GPU it says so and exits
//! successfully.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, ensure, Result};
use examples::attention::{attention_into, attn_fwd};
use kernel_runtime::testing::{do_bench_gpu, BenchOptions};
use kernel_runtime::{cdiv, f16, Device, LaunchError, Tensor};

const USAGE: &str = "usage: bench_attention [--max-ctx N] [--ctx N,N,...] [--no-tma] [--out DIR]";
const BATCH: usize = 4;
const HEADS: usize = 32;

/// `n` values uniform in `[-1, 1)` (xorshift64*).
fn values(n: usize, seed: u64) -> Vec<f16> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            f16::from_f64(2.0 * u - 1.0)
        })
        .collect()
}

/// Rows `rows` of head `bh` of `softmax(q k^T * scale) v` in float64 (`q`, `k`, `v` that head's
/// `n x d` values).
fn reference_rows(q: &[f64], k: &[f64], v: &[f64], n: usize, d: usize, rows: std::ops::Range<usize>, causal: bool, scale: f64) -> Vec<f64> {
    let mut out = Vec::new();
    for i in rows {
        let keys = if causal { i + 1 } else { n };
        let s: Vec<f64> = (0..keys).map(|j| (0..d).map(|x| q[i * d + x] * k[j * d + x]).sum::<f64>() * scale).collect();
        let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
        let sum: f64 = e.iter().sum();
        out.extend((0..d).map(|x| (0..keys).map(|j| e[j] * v[j * d + x]).sum::<f64>() / sum));
    }
    out
}

/// The worst `|got - want| / (2e-3 + 1e-2 |want|)` (NaN counts as infinite).
fn worst(got: &[f64], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(g, w)| if g.is_nan() { f64::INFINITY } else { (g - w).abs() / (2e-3 + 1e-2 * w.abs()) }).fold(0.0, f64::max)
}

/// Every config of `attn_fwd` on ragged shapes, every row of every head against float64.
fn check_configs(dev: &Device) -> Result<()> {
    for (b, h, n) in [(2, 3, 1000), (1, 1, 77)] {
        for d in [64, 128] {
            let shape = [b, h, n, d];
            let numel = b * h * n * d;
            let q = Tensor::from_vec(dev, &shape, values(numel, 4))?;
            let k = Tensor::from_vec(dev, &shape, values(numel, 5))?;
            let v = Tensor::from_vec(dev, &shape, values(numel, 6))?;
            let (qv, kv, vv) = (q.try_to_f64_vec()?, k.try_to_f64_vec()?, v.try_to_f64_vec()?);
            let scale = 1.0 / (d as f32).sqrt();
            for causal in [false, true] {
                let want: Vec<f64> = (0..b * h)
                    .flat_map(|bh| {
                        let r = bh * n * d..(bh + 1) * n * d;
                        reference_rows(&qv[r.clone()], &kv[r.clone()], &vv[r], n, d, 0..n, causal, f64::from(scale))
                    })
                    .collect();
                for cfg in 0..attn_fwd::CONFIGS.len() {
                    let o = Tensor::<f16>::full(dev, &shape, f16::NAN)?;
                    let (ni, st) = (n as i32, |t: &Tensor<f16>, i: usize| t.stride(i) as i32);
                    let launched = attn_fwd::launch_config(
                        cfg,
                        |meta: &attn_fwd::Meta| (cdiv(ni, meta.BLOCK_M), (b * h) as i32),
                        &q, &k, &v, &o, scale,
                        st(&q, 0), st(&q, 1), st(&q, 2), st(&k, 0), st(&k, 1), st(&k, 2),
                        st(&v, 0), st(&v, 1), st(&v, 2), st(&o, 0), st(&o, 1), st(&o, 2),
                        h as i32, ni, d as i32, causal,
                    );
                    match launched {
                        // A config built for other architectures than this GPU's.
                        Err(LaunchError::MissingEntry { .. }) if !attn_fwd::CONFIGS[cfg].archs.is_empty() => continue,
                        r => r?,
                    }
                    let r = worst(&o.try_to_f64_vec()?, &want);
                    ensure!(r <= 1.0, "config {cfg} {:?}, shape {shape:?}, causal {causal}: worst error ratio {r}", attn_fwd::CONFIGS[cfg]);
                }
            }
        }
    }
    println!("every config matches the float64 reference on ragged shapes");
    Ok(())
}

struct Point {
    d: usize,
    causal: bool,
    n: usize,
    ms: f64,
    tflops: f64,
}

fn run_point(dev: &Device, opts: &BenchOptions, n: usize, d: usize, causal: bool) -> Result<Point> {
    let shape = [BATCH, HEADS, n, d];
    let numel = BATCH * HEADS * n * d;
    let q = Tensor::from_vec(dev, &shape, values(numel, 1))?;
    let k = Tensor::from_vec(dev, &shape, values(numel, 2))?;
    let v = Tensor::from_vec(dev, &shape, values(numel, 3))?;
    let o = Tensor::<f16>::full(dev, &shape, f16::NAN)?;
    let scale = 1.0 / (d as f32).sqrt();
    let run = || attention_into(&q, &k, &v, &o, causal, scale);
    let head = |t: &Tensor<f16>, bh: usize| -> Result<Vec<f64>> { Ok(t.try_to_f64_vec()?[bh * n * d..(bh + 1) * n * d].to_vec()) };
    let check = || -> Result<()> {
        for bh in [0, BATCH * HEADS - 1] {
            let (qv, kv, vv, ov) = (head(&q, bh)?, head(&k, bh)?, head(&v, bh)?, head(&o, bh)?);
            for start in [0, n - 32] {
                let want = reference_rows(&qv, &kv, &vv, n, d, start..start + 32, causal, f64::from(scale));
                let got = &ov[start * d..(start + 32) * d];
                let r = worst(got, &want);
                ensure!(r <= 1.0, "attention d {d} causal {causal} n {n}: head {bh} rows {start}..: worst error ratio {r}");
            }
        }
        Ok(())
    };
    run()?;
    check()?;
    o.try_fill(f16::NAN)?;
    let ms = do_bench_gpu(dev, || run(), opts)?.median_ms;
    check()?;
    let flops = 4.0 * (BATCH * HEADS) as f64 * (n * n) as f64 * d as f64 * if causal { 0.5 } else { 1.0 };
    Ok(Point { d, causal, n, ms, tflops: flops / (ms * 1e-3) / 1e12 })
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut out, mut max_ctx) = (None::<PathBuf>, 16384usize);
    let mut lengths: Vec<usize> = vec![1024, 2048, 4096, 8192, 16384];
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = Some(args.next().map(PathBuf::from).ok_or_else(|| anyhow::anyhow!(USAGE))?),
            "--max-ctx" => max_ctx = args.next().and_then(|s| s.parse().ok()).ok_or_else(|| anyhow::anyhow!(USAGE))?,
            "--ctx" => {
                let list = args.next().ok_or_else(|| anyhow::anyhow!(USAGE))?;
                lengths = list.split(',').map(|n| n.trim().parse::<usize>().ok().filter(|n| *n > 0)).collect::<Option<_>>().ok_or_else(|| anyhow::anyhow!("--ctx takes positive sequence lengths, like 1536,3000; {USAGE}"))?;
            }
            "--no-tma" => {
                let mut settings = kernel_runtime::Settings::from_env();
                settings.tma = false;
                settings.install().map_err(|e| anyhow::anyhow!("--no-tma: {e}"))?;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            _ => bail!("{USAGE}"),
        }
    }
    let dev = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            println!("bench_attention needs a GPU: {e}");
            return Ok(());
        }
    };
    // Autotuning decisions (with `KERNEL_PRINT_AUTOTUNING=1`, each config's time) go to stderr.
    examples::logging::init_logging();
    check_configs(&dev)?;
    let opts = BenchOptions::default();
    let mut points = Vec::new();
    for d in [64, 128] {
        for causal in [false, true] {
            for n in lengths.iter().copied().filter(|n| *n <= max_ctx) {
                let p = run_point(&dev, &opts, n, d, causal)?;
                println!("attention d {:3} causal {:5} n {:5}: {:8.3} ms {:7.1} TFLOPS", p.d, p.causal, p.n, p.ms, p.tflops);
                points.push(p);
            }
        }
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir)?;
        let mut csv = String::from("head_dim,causal,n_ctx,ours_ms,ours_tflops\n");
        for p in &points {
            writeln!(csv, "{},{},{},{:.5},{:.2}", p.d, p.causal, p.n, p.ms, p.tflops)?;
        }
        std::fs::write(dir.join("attention.csv"), csv)?;
    }
    Ok(())
}
