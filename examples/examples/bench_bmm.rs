//! Batched matmul on a GPU: our `batched_matmul` against cuBLAS's strided-batched GEMM, in
//! TFLOPS, the two timed together with their calls interleaved (as `bench_matmul`).
//!
//! ```text
//! bench_bmm [--batch 16] [--sizes 512,1024,2048] [--layout nn|nt|tn|tt]
//! ```
//!
//! Each point is `batch` products of `size³` with fresh random f16 inputs (`--layout`: A and/or
//! B as the transposed views of contiguous tensors), checked against cuBLAS before it is
//! timed (L2 flushed, 25 ms warm-up, 100 ms of repetitions, median). Without a GPU it says so
//! and exits successfully.

use anyhow::{bail, Context, Result};
use examples::batched_matmul::batched_matmul_into;
use kernel_runtime::baseline::{cublas_available, cublas_bmm_f16};
use kernel_runtime::testing::{assert_close, do_bench_gpu_interleaved, BenchFn, BenchOptions};
use kernel_runtime::{f16, Device, Tensor};

const USAGE: &str = "usage: bench_bmm [--batch N] [--sizes 512,1024,...] [--layout nn|nt|tn|tt]";

fn main() -> Result<()> {
    let (mut batch, mut sizes, mut layout) = (16usize, vec![512usize, 1024, 2048], (false, false));
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--batch" => batch = value("--batch")?.parse()?,
            "--sizes" => sizes = value("--sizes")?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?,
            "--layout" => {
                layout = match value("--layout")?.as_str() {
                    "nn" => (false, false),
                    "nt" => (false, true),
                    "tn" => (true, false),
                    "tt" => (true, true),
                    other => bail!("--layout {other}: expected nn, nt, tn or tt\n{USAGE}"),
                }
            }
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let Ok(dev) = Device::cuda(0) else {
        println!("bench_bmm: no CUDA device; nothing to do");
        return Ok(());
    };
    cublas_available()?;
    let opts = BenchOptions::default();
    println!("{batch} x size^3, layout {layout:?} (A, B transposed); TFLOPS from the median");
    println!("{:>6} {:>10} {:>10} {:>8}", "size", "cuBLAS", "ours", "ours/cuBLAS");
    let mut ratios = Vec::new();
    for (i, &s) in sizes.iter().enumerate() {
        let operand = |transposed: bool, seed: u64| -> Result<Tensor<f16>> {
            let t = Tensor::<f16>::randn(&dev, &[batch, s, s], seed)?;
            Ok(if transposed { t.t() } else { t })
        };
        let (a, b) = (operand(layout.0, 100 + 2 * i as u64)?, operand(layout.1, 101 + 2 * i as u64)?);
        let c = Tensor::<f16>::zeros(&dev, &[batch, s, s])?;
        cublas_bmm_f16(&a, &b, &c)?;
        let expected = c.try_to_f64_vec()?;
        c.try_fill(f16::NAN)?;
        batched_matmul_into(&a, &b, &c)?; // autotunes on the first call for this shape
        assert_close(&c, &expected).with_context(|| format!("size {s}: ours differs from cuBLAS"))?;
        let mut theirs = || -> Result<()> { Ok(cublas_bmm_f16(&a, &b, &c)?) };
        let mut ours = || -> Result<()> { Ok(batched_matmul_into(&a, &b, &c)?) };
        let mut fs: [BenchFn<'_, anyhow::Error>; 2] = [&mut theirs, &mut ours];
        let r = do_bench_gpu_interleaved(&dev, &mut fs, &opts)?;
        let tflops = |ms: f64| 2.0 * (batch * s * s * s) as f64 / (ms * 1e-3) / 1e12;
        let (t0, t1) = (tflops(r[0].median_ms), tflops(r[1].median_ms));
        ratios.push(t1 / t0);
        println!("{s:>6} {t0:>10.1} {t1:>10.1} {:>8.3}", t1 / t0);
    }
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len().max(1) as f64).exp();
    println!("geometric mean ours / cuBLAS: {geo:.3}");
    Ok(())
}
