//! The quantized matmuls on a GPU: `examples::matmul_8bit`'s f8e4m3 (scaled, f16 result) and
//! i8 (i32 result) products, timed interleaved with cuBLAS's f16 GEMM of the same shape (its
//! f16 rate is the ceiling of our 8-bit products, which run on the f16 tensor cores), in
//! TFLOPS (TOPS for i8). `scripts/torch_8bit_bench.py` times cuBLASLt's 8-bit GEMMs
//! (`torch._scaled_mm`, `torch._int_mm`) on the same shapes.
//!
//! ```text
//! bench_matmul_8bit [--sizes 1024,2048,4096,8192] [--out DIR]
//! ```
//!
//! Squares `M = N = K`; `B` row-major (K, N) and (`t`) the transposed view of an (N, K) matrix
//! (the layout cuBLASLt's 8-bit GEMMs take). Each point's output is checked on 8 rows against
//! a float64 (i8: exact) reference first, then timed (L2 flushed, 25 ms warm-up, 100 ms of
//! repetitions, median).
//! Without a GPU it says so and exits successfully.

use anyhow::{bail, ensure, Context, Result};
use examples::matmul_8bit::{matmul_fp8_into, matmul_i8_into};
use kernel_runtime::baseline::{cublas_available, cublas_bmm_f16};
use kernel_runtime::testing::{do_bench_gpu_interleaved, BenchFn, BenchOptions};
use kernel_runtime::{f16, f8e4m3, Device, Tensor};
use std::fmt::Write as _;

const USAGE: &str = "usage: bench_matmul_8bit [--sizes 1024,2048,...] [--out DIR]";

fn main() -> Result<()> {
    let (mut sizes, mut out) = (vec![1024usize, 2048, 4096, 8192], None);
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--sizes" => sizes = value("--sizes")?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?,
            "--out" => out = Some(std::path::PathBuf::from(value("--out")?)),
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let Ok(dev) = Device::cuda(0) else {
        println!("bench_matmul_8bit: no CUDA device; nothing to do");
        return Ok(());
    };
    cublas_available()?;
    let opts = BenchOptions::default();
    let mut csv = String::from("size,provider,tflops\n");
    println!("{:>6} {:>12} {:>10} {:>10} {:>10} {:>10}", "size", "cuBLAS f16", "ours fp8", "fp8 B^T", "ours i8", "i8 B^T");
    for (i, &s) in sizes.iter().enumerate() {
        let seed = 10 * i as u64;
        // Values: normals (fp8, rounded) and uniform integers (i8).
        let a8 = Tensor::<f8e4m3>::randn(&dev, &[s, s], seed)?;
        let b8 = Tensor::<f8e4m3>::randn(&dev, &[s, s], seed + 1)?;
        let b8t = b8.t().contiguous().t();
        let ai = Tensor::<i8>::rand_uniform(&dev, &[s, s], -128.0, 128.0, seed + 2)?;
        let bi = Tensor::<i8>::rand_uniform(&dev, &[s, s], -128.0, 128.0, seed + 3)?;
        let bit = bi.t().contiguous().t();
        let c16 = Tensor::<f16>::zeros(&dev, &[s, s])?;
        let c32 = Tensor::<i32>::zeros(&dev, &[s, s])?;
        // cuBLAS in f16 on the same fp8 values (exact in f16).
        let a16 = Tensor::from_vec(&dev, &[1, s, s], a8.to_vec().iter().map(|v| f16::from_f32(v.to_f32())).collect())?;
        let b16 = Tensor::from_vec(&dev, &[1, s, s], b8.to_vec().iter().map(|v| f16::from_f32(v.to_f32())).collect())?;
        let ref16 = Tensor::<f16>::zeros(&dev, &[1, s, s])?;

        let (a8v, ai_v) = (a8.to_f64_vec(), ai.to_f64_vec());
        for b in [&b8, &b8t] {
            matmul_fp8_into(&a8, b, &c16, 0.5)?; // autotunes on the first call for this shape
            check_rows(&a8v, &b.to_f64_vec(), &c16.to_f64_vec(), s, 0.5, 1e-2).context("fp8")?;
        }
        for b in [&bi, &bit] {
            matmul_i8_into(&ai, b, &c32)?;
            check_rows(&ai_v, &b.to_f64_vec(), &c32.to_f64_vec(), s, 1.0, 0.0).context("i8")?;
        }

        let mut cublas = || -> Result<()> { Ok(cublas_bmm_f16(&a16, &b16, &ref16)?) };
        let mut fp8 = || -> Result<()> { Ok(matmul_fp8_into(&a8, &b8, &c16, 0.5)?) };
        let mut fp8t = || -> Result<()> { Ok(matmul_fp8_into(&a8, &b8t, &c16, 0.5)?) };
        let mut int8 = || -> Result<()> { Ok(matmul_i8_into(&ai, &bi, &c32)?) };
        let mut int8t = || -> Result<()> { Ok(matmul_i8_into(&ai, &bit, &c32)?) };
        let mut fs: [BenchFn<'_, anyhow::Error>; 5] = [&mut cublas, &mut fp8, &mut fp8t, &mut int8, &mut int8t];
        let r = do_bench_gpu_interleaved(&dev, &mut fs, &opts)?;
        let tflops = |ms: f64| 2.0 * (s * s * s) as f64 / (ms * 1e-3) / 1e12;
        let t: Vec<f64> = r.iter().map(|r| tflops(r.median_ms)).collect();
        println!("{s:>6} {:>12.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}", t[0], t[1], t[2], t[3], t[4]);
        for (name, v) in ["cublas_f16", "ours_fp8", "ours_fp8_bt", "ours_i8", "ours_i8_bt"].iter().zip(&t) {
            let _ = writeln!(csv, "{s},{name},{v:.2}");
        }
    }
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("matmul_8bit.csv"), csv)?;
    }
    Ok(())
}

/// Checks 8 rows of `c` (`s` x `s`, row-major values) against `scale * (a @ b)` in float64:
/// within `rtol` (relative to the row's largest magnitude), or exactly for `rtol` 0.
fn check_rows(a: &[f64], b: &[f64], c: &[f64], s: usize, scale: f64, rtol: f64) -> Result<()> {
    for row in (0..8).map(|i| i * (s - 1) / 7) {
        let want: Vec<f64> = (0..s).map(|j| scale * (0..s).map(|p| a[row * s + p] * b[p * s + j]).sum::<f64>()).collect();
        let big = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (j, w) in want.iter().enumerate() {
            let g = c[row * s + j];
            ensure!((g - w).abs() <= rtol * big, "c[{row}, {j}] = {g}, want {w}");
        }
    }
    Ok(())
}
