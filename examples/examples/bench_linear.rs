//! The fused linear layer on a GPU, in TFLOPS: `examples::linear` (bf16, autotuned) with the
//! bias and each activation fused, on square sizes and on transformer MLP shapes, with the
//! weight row-major (`nn`) or as `nn.Linear` stores it, transposed (`nt`).
//! `scripts/triton_linear_bench.py` measures PyTorch (cuBLAS alone; cuBLAS followed by separate
//! bias and GELU kernels; `addmm` then GELU) and a Triton kernel written after its matmul
//! tutorial with the same epilogue, on the same shapes; `scripts/linear_compare.py` joins the
//! CSVs.
//!
//! ```text
//! bench_linear [--sizes 2048,4096,...] [--shapes MxNxK,...] [--layouts nn,nt] [--out DIR]
//! ```
//!
//! By default squares 2048, 4096 and 8192 and a transformer MLP's two projections (8192 tokens,
//! width 4096: 8192 x 16384 x 4096 and 8192 x 4096 x 16384); `--sizes` alone times only its
//! squares.
//!
//! For each point: random inputs (`randn`), the output poisoned with NaN, one run checked
//! against a float64 reference on 4 rows spread over the output (every column), the output
//! poisoned again, then timed with `do_bench_gpu` (L2 flushed before every call, 25 ms of
//! warm-up, 100 ms of repetitions, median) and checked once more.
//!
//! Output: a table on stdout and, with `--out DIR`, `DIR/linear.csv` (columns
//! `m,n,k,layout,activation,ms,tflops`). Without a GPU it says so and exits successfully.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{bail, ensure, Context, Result};
use examples::linear::{gelu, gelu_tanh, linear_into};
use kernel_runtime::testing::{do_bench_gpu, BenchOptions};
use kernel_runtime::{bf16, Device, Func, Tensor};

const USAGE: &str = "usage: bench_linear [--sizes 2048,4096,...] [--shapes MxNxK,...] [--layouts nn,nt] [--out DIR]";

fn gelu_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
}

fn gelu_tanh_ref(x: f64) -> f64 {
    0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn none_ref(x: f64) -> f64 {
    x
}

/// The worst `|got - want| / (2e-2 + 1e-2 |want|)` (bf16 output; NaN counts as infinite).
fn worst(got: &[f64], want: &[f64]) -> f64 {
    got.iter().zip(want).map(|(g, w)| if g.is_nan() { f64::INFINITY } else { (g - w).abs() / (2e-2 + 1e-2 * w.abs()) }).fold(0.0, f64::max)
}

/// Checks 4 rows of `y = act(x @ w + bias)` (every column) against float64.
fn check(x: &[f64], w: &[f64], bias: &[f64], y: &Tensor<bf16>, (m, n, k): (usize, usize, usize), act: fn(f64) -> f64) -> Result<()> {
    let got = y.try_to_f64_vec()?;
    for r in 0..4 {
        let i = r * (m - 1) / 3;
        let want: Vec<f64> = (0..n).map(|j| act((0..k).map(|l| x[i * k + l] * w[l * n + j]).sum::<f64>() + bias[j])).collect();
        let e = worst(&got[i * n..(i + 1) * n], &want);
        ensure!(e <= 1.0, "{m}x{n}x{k}: row {i} differs from the float64 reference (worst error ratio {e})");
    }
    Ok(())
}

struct Args {
    shapes: Vec<(usize, usize, usize)>,
    layouts: Vec<String>,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut a = Args { shapes: [2048, 4096, 8192].iter().map(|&s| (s, s, s)).collect(), layouts: vec!["nn".into(), "nt".into()], out: None };
    // The MLP of a transformer with model width 4096 on 8192 tokens: up- and down-projection.
    let (mut sizes_given, mut shapes_given) = (false, false);
    let mut extra = vec![(8192, 16384, 4096), (8192, 4096, 16384)];
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--sizes" => {
                let sizes: Vec<usize> = value("--sizes")?.split(',').map(|s| s.trim().parse()).collect::<Result<_, _>>()?;
                a.shapes = sizes.iter().map(|&s| (s, s, s)).collect();
                sizes_given = true;
            }
            "--shapes" => {
                shapes_given = true;
                extra = value("--shapes")?
                    .split(',')
                    .map(|s| match s.split('x').map(|d| d.trim().parse::<usize>()).collect::<Result<Vec<_>, _>>()?.as_slice() {
                        [m, n, k] => Ok((*m, *n, *k)),
                        _ => bail!("--shapes {s}: expected MxNxK\n{USAGE}"),
                    })
                    .collect::<Result<_>>()?
            }
            "--layouts" => a.layouts = value("--layouts")?.split(',').map(str::to_string).collect(),
            "--out" => a.out = Some(PathBuf::from(value("--out")?)),
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    if let Some(bad) = a.layouts.iter().find(|l| !["nn", "nt"].contains(&l.as_str())) {
        bail!("--layouts {bad}: expected nn or nt\n{USAGE}");
    }
    // `--sizes` alone times only those squares; `--shapes` alone, the squares and those shapes.
    if shapes_given || !sizes_given {
        a.shapes.extend(extra);
    }
    Ok(a)
}

fn main() -> Result<()> {
    examples::logging::init_logging();
    let args = parse_args()?;
    let Ok(dev) = Device::cuda(0) else {
        println!("bench_linear: no CUDA device; nothing to do");
        return Ok(());
    };
    let opts = BenchOptions::default();
    let activations: [(&str, Option<Func>, fn(f64) -> f64); 3] = [("none", None, none_ref), ("gelu", Some(gelu), gelu_ref), ("gelu_tanh", Some(gelu_tanh), gelu_tanh_ref)];
    let mut csv = String::from("m,n,k,layout,activation,ms,tflops\n");
    println!("{:>6} {:>6} {:>6} {:>6} {:>10} {:>9} {:>8}", "M", "N", "K", "layout", "activation", "ms", "TFLOPS");
    for &(m, n, k) in &args.shapes {
        for layout in &args.layouts {
            let x = Tensor::<bf16>::randn(&dev, &[m, k], 1)?;
            // `nt`: the weight stored (N, K), as nn.Linear stores it, passed transposed.
            let w = if layout == "nt" { Tensor::<bf16>::randn(&dev, &[n, k], 2)?.t() } else { Tensor::<bf16>::randn(&dev, &[k, n], 2)? };
            let bias = Tensor::<bf16>::randn(&dev, &[n], 3)?;
            let (xv, wv, bv) = (x.try_to_f64_vec()?, w.try_contiguous()?.try_to_f64_vec()?, bias.try_to_f64_vec()?);
            let y = Tensor::<bf16>::zeros(&dev, &[m, n])?;
            for &(name, act, act_ref) in &activations {
                y.try_fill(bf16::NAN)?;
                linear_into(&x, &w, &bias, &y, act)?; // autotunes on the first call for this shape
                check(&xv, &wv, &bv, &y, (m, n, k), act_ref)?;
                y.try_fill(bf16::NAN)?;
                let r = do_bench_gpu(&dev, || -> Result<()> { Ok(linear_into(&x, &w, &bias, &y, act)?) }, &opts)?;
                check(&xv, &wv, &bv, &y, (m, n, k), act_ref)?;
                let tflops = 2.0 * (m * n * k) as f64 / (r.median_ms * 1e-3) / 1e12;
                println!("{m:>6} {n:>6} {k:>6} {layout:>6} {name:>10} {:>9.4} {tflops:>8.1}", r.median_ms);
                writeln!(csv, "{m},{n},{k},{layout},{name},{:.6},{tflops:.2}", r.median_ms)?;
            }
        }
    }
    if let Some(dir) = args.out {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("linear.csv"), csv)?;
    }
    Ok(())
}
