//! Project tasks, run as `cargo xtask <command>` (or `./x <command>` on a fresh machine,
//! which first installs the pinned toolchain).

mod bundle;
mod difftest;
mod downstream;
mod package;
mod ptx;

use anyhow::{bail, ensure, Context, Result};
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

const HELP: &str = "\
cargo xtask <command>

commands:
  matmul       run the matmul example (GPU when one is usable, else the CPU backend)
  test         what CI runs: build every kernel instance to PTX for sm_80 and sm_90a,
               validate it with ptxas (the host tests build beside it, at the lowest CPU
               priority), run the whole test suite and, beside it, build the
               template crate templates/kernel-crate from a fresh copy (its build.rs builds
               and embeds its PTX) and run it without KERNEL_PTX_DIR, then package-check
               (less its build without cuda, which the compile-fail suite does)
  bench-cpu    benchmark the CPU backend (matmul 512^3 f16, vector add) in release mode
  bench matmul the seeds' GPU benchmark: ours (with/without fused LeakyReLU) vs cuBLAS
               (with/without a separate LeakyReLU), square 256..8192 step 256 and non-square
               shapes; builds the PTX first when a GPU is present; without a GPU it says so
               [--quick] (squares 256, 512, 1024, 2048, 4096; 3 non-square shapes)
               [--out DIR] (default target/bench: tables as CSV, SVG and PNG plots, summary)
               [--square-only | --nonsquare-only] [--sizes 512,1024] [--warmup-ms MS]
               [--rep-ms MS] [--no-flush] [--progress]
               Triton's numbers on the same shapes: python3 scripts/triton_matmul_bench.py
  bench memory the memory-bound kernels (vector add, softmax f32/f16 with the online
               kernel for long rows, layer norm forward f16) in GB/s against the copy
               bandwidth measured in the same run; with Triton and PyTorch importable, their
               tutorial kernels and PyTorch on the same shapes and a table of ratios
               (`bench vector_add`, `bench softmax`, `bench layer_norm`: one kernel)
               [--out DIR] (default target/bench: memory.csv, triton-memory.csv,
               memory-compare.md)
  bench attention
               flash-attention forward (batch 4, 32 heads, head dim 64 and 128, causal and
               not, n_ctx 1024..16384) in TFLOPS; with Triton and PyTorch importable, a
               Triton kernel after its tutorial and PyTorch's SDPA on the same shapes and a
               table of ratios [--max-ctx N] [--out DIR] (default target/bench:
               attention.csv, triton-attention.csv, attention-compare.md)
  bench linear the fused bf16 linear layer (bias and GELU on the accumulator; squares 2048,
               4096, 8192 and a transformer MLP's projections, weight row-major and
               transposed) in TFLOPS; with Triton and PyTorch importable, cuBLAS alone, cuBLAS
               followed by separate bias and GELU kernels, and Triton's tutorial matmul with
               the same epilogue on the same shapes, and a table of ratios
               [--sizes S,...] [--shapes MxNxK,...] [--layouts nn,nt] [--out DIR] (default
               target/bench: linear.csv, triton-linear.csv, linear-compare.md)
  bench matmul-8bit
               the quantized matmuls (f8e4m3 scaled to f16, i8 to i32; squares 1024..8192,
               B row-major and transposed) in TFLOPS against cuBLAS f16; with PyTorch
               importable, cuBLASLt's 8-bit GEMMs (torch._scaled_mm, torch._int_mm) on the
               same shapes [--sizes 1024,2048,...] [--out DIR] (default target/bench:
               matmul_8bit.csv, torch-8bit.csv)
  build-ptx    build device crates to PTX, check them with ptxas, write manifests
               [--arch sm_80|sm_90|sm_90a|all]... (default sm_90a)
               [--crate PATH]... (default: xtask/ptx-smoke) [--release] (always release)
               [--kernel NAME]... (only these kernels' entries: the others' device code is
               not compiled; the module then holds just these)
               [--lenient] (spills and ptxas performance advisories warn instead of failing)
               output: target/ptx/<arch>/<crate>.{ptx,cubin,manifest.json}
  ci           same as test
  package-check
               the library crates can be depended on: `cargo package --no-verify` of every
               publishable crate, no dependency in two versions (`cargo tree --duplicates`),
               kernel-runtime compiles without its `cuda` feature
  gpu-bundle   build release test and example binaries plus sm_90a PTX into target/gpu-bundle,
               for a GPU machine without Rust (run scripts/gpu-check.sh there), and the
               template crate's binary (PTX embedded) as bin/kernel-crate; benchmark
               binaries go to target/gpu-bundle/bench (bench_matmul, not run by gpu-check.sh)
  downstream   the step of `test` that builds templates/kernel-crate from a fresh copy in
               target/downstream/ (cargo build: its build.rs builds and embeds the PTX) and
               runs it without KERNEL_PTX_DIR
  bless        rewrite the code generator's snapshots (kernel-macros/tests/codegen/out: the IR,
               host and device code of the corpus kernels) after an intended change of what
               #[kernel] generates, and remove stale ones; review them with git diff
               (= KERNEL_BLESS=1 cargo test -p kernel-macros snapshots)
  difftest     the CPU and GPU backends on random valid kernels: generates them into
               target/difftest/, builds them (PTX too when a GPU is present or with --ptx),
               runs each on the CPU backend and, with a GPU, on the GPU, and compares
               [--kernels N] (default 40) [--seed S] (default 1) [--batch B] (kernels per
               crate, default 400) [--ptx] [--no-run] [--bundle] (runners and PTX into
               target/difftest/bundle for scripts/gpu-check.sh on a GPU machine)
  help         print this text

build-ptx uses the pinned nightly (installed with rust-src and llvm-tools when missing)
and ptxas from $PTXAS, else PATH, else the nvidia-cuda-nvcc-cu12 wheel in .venv
(installed there when missing). It fails on any ptxas error or register spill.
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        print!("{HELP}");
        return Ok(());
    };
    let rest = &args[1..];
    if rest.iter().any(|a| a == "--help" || a == "-h") && matches!(cmd.as_str(), "build-ptx" | "ci") {
        print!("{HELP}");
        return Ok(());
    }
    match cmd.as_str() {
        "matmul" => {
            // With a GPU present, the example needs the PTX of its kernels.
            build_ptx_for_gpu()?;
            cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "matmul", "--"], rest)
        }
        "bench" => bench(rest),
        "bench-cpu" => cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "bench_cpu", "--"], rest),
        "build-ptx" => ptx::build_ptx(&root(), &ptx::Options::parse(&root(), rest)?),
        "gpu-bundle" => {
            let args = ["--arch".to_string(), "sm_90a".to_string()];
            ptx::build_ptx(&root(), &ptx::Options::parse(&root(), &args)?)?;
            bundle::gpu_bundle(&root())
        }
        "test" | "ci" => {
            let archs = ["--arch", "sm_80", "--arch", "sm_90a"].map(String::from);
            let host = host_build_at_low_priority(rest);
            let device = ptx::build_ptx(&root(), &ptx::Options::parse(&root(), &archs)?);
            // Its failure shows again in the test build below.
            let _ = host.join();
            device?;
            test_suite_and_template(rest)?;
            package::package_check(&root(), package::Checks::AfterTestSuite)
        }
        "downstream" => {
            print!("{}", downstream::test_template(&root())?);
            Ok(())
        }
        "bless" => cargo_with_env(&["test", "-p", "kernel-macros", "snapshots"], rest, &[("KERNEL_BLESS", "1")]),
        "package-check" => package::package_check(&root(), package::Checks::All),
        "difftest" => difftest::difftest(&root(), &difftest::Options::parse(rest)?, gpu_arch()),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => bail!("unknown command `{other}`\n\n{HELP}"),
    }
}

/// `./x test`'s host test build, started beside the device build at the lowest CPU priority
/// (`nice -n 19`): it takes what the device build leaves idle (a core, while `llc` compiles the
/// last module) and next to nothing otherwise, which the same build at the same priority took
/// (both then took longer than one after the other). Quiet: the device build's report is
/// what shows; errors show again when [`test_suite_and_template`] builds. Without `nice` it
/// does nothing.
fn host_build_at_low_priority(rest: &[String]) -> std::thread::JoinHandle<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let args: Vec<String> = rest.iter().take_while(|a| *a != "--").cloned().collect();
    std::thread::spawn(move || {
        let _ = Command::new("nice")
            .args(["-n", "19", &cargo, "test", "--workspace", "--no-run", "--quiet"])
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    })
}

/// `./x test` after the device build: the host test build (on every core), then the test run
/// beside the template crate's build and run ([`downstream::test_template`]), which starts once
/// cargo runs the first test binary (the template builds in the same target directory, whose
/// lock cargo holds while it builds) and is printed once the tests are done. The test run and
/// the template's build, mostly a chain of single crates, each leave a core idle much of the
/// time.
fn test_suite_and_template(rest: &[String]) -> Result<()> {
    let cargo_args: Vec<String> = rest.iter().take_while(|a| *a != "--").cloned().collect();
    cargo(&["test", "--workspace", "--no-run"], &cargo_args)?;
    let (started, start) = std::sync::mpsc::channel::<()>();
    let template = std::thread::spawn(move || {
        // Also when the test run ends without running anything (a failure, `--quiet`).
        let _ = start.recv();
        downstream::test_template(&root())
    });
    let tests = cargo_test_signalling(rest, move || {
        let _ = started.send(());
    });
    let template = template.join().map_err(|_| anyhow::anyhow!("the template crate's test panicked"))?;
    tests?;
    print!("{}", template?);
    Ok(())
}

/// `cargo test --workspace <rest>` with its messages passed through; `running` is called when
/// the first test binary runs (cargo's `Running` line), or when cargo exits.
fn cargo_test_signalling(rest: &[String], running: impl FnOnce()) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let color = if std::io::stderr().is_terminal() { "--color=always" } else { "--color=auto" };
    let mut child = Command::new(&cargo)
        .args(["test", color, "--workspace"])
        .args(rest)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("running {cargo} test --workspace"))?;
    let mut running = Some(running);
    for line in BufReader::new(child.stderr.take().expect("piped stderr")).lines().map_while(Result::ok) {
        eprintln!("{line}");
        if line.trim_start().starts_with("Running ") {
            if let Some(f) = running.take() {
                f();
            }
        }
    }
    if let Some(f) = running {
        f();
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("`cargo test --workspace` failed ({status})");
    }
    Ok(())
}

/// `cargo xtask bench <what> [args]`: the GPU benchmarks (`matmul`).
fn bench(rest: &[String]) -> Result<()> {
    match rest.first().map(String::as_str) {
        Some("matmul") => {
            if rest[1..].iter().any(|a| a == "--help" || a == "-h") {
                print!("{HELP}");
                return Ok(());
            }
            build_ptx_for_gpu()?;
            cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "bench_matmul", "--"], &rest[1..])
        }
        Some(kernel @ ("memory" | "vector_add" | "softmax" | "layer_norm")) => bench_memory(kernel, &rest[1..]),
        Some("attention") => bench_attention(&rest[1..]),
        Some("linear") => bench_linear(&rest[1..]),
        Some("matmul-8bit") => bench_matmul_8bit(&rest[1..]),
        Some(other) => bail!("unknown benchmark `{other}` (available: matmul, memory, vector_add, softmax, layer_norm, attention, linear, matmul-8bit)\n\n{HELP}"),
        None => bail!("which benchmark? `cargo xtask bench matmul [--quick]`\n\n{HELP}"),
    }
}

/// `cargo xtask bench memory|vector_add|softmax|layer_norm [--out DIR]`: the memory-bound
/// kernels (`memory`: all three) against the copy bandwidth (`bench_memory`), then, when
/// `python3` can import Triton, Triton's tutorial kernels and PyTorch on the same shapes
/// (`scripts/triton_memory_bench.py`) and the table of ratios (`scripts/memory_compare.py`).
fn bench_memory(kernel: &str, rest: &[String]) -> Result<()> {
    let out = match rest {
        [] => root().join("target/bench"),
        [flag, dir] if flag == "--out" => PathBuf::from(dir),
        _ => bail!("usage: cargo xtask bench {kernel} [--out DIR]"),
    };
    let only = if kernel == "memory" { "vector_add,softmax,layer_norm" } else { kernel };
    if !build_ptx_for_gpu()? {
        bail!("`cargo xtask bench {kernel}` needs a GPU (nvidia-smi found none)");
    }
    let out_s = out.to_string_lossy().to_string();
    let args = ["--only".to_string(), only.to_string(), "--out".to_string(), out_s.clone()];
    cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "bench_memory", "--"], &args)?;
    if !python_has_triton() {
        println!("bench {kernel}: python3 cannot import triton and torch; Triton's and PyTorch's numbers are left out");
        return Ok(());
    }
    python_script("triton_memory_bench.py", &["--only".into(), only.into(), "--out".into(), out_s.clone()])?;
    let md = out.join("memory-compare.md").to_string_lossy().to_string();
    python_script("memory_compare.py", &[out_s.clone(), out_s, "--out".into(), md])
}

/// Whether `python3` can import Triton and PyTorch (the GPU benchmarks' references).
fn python_has_triton() -> bool {
    Command::new("python3").args(["-c", "import triton, torch"]).status().is_ok_and(|s| s.success())
}

/// Runs `scripts/<name>` with `python3` and `args`; an error when it fails.
fn python_script(name: &str, args: &[String]) -> Result<()> {
    let status = Command::new("python3").arg(root().join("scripts").join(name)).args(args).status()?;
    ensure!(status.success(), "scripts/{name} failed ({status})");
    Ok(())
}

/// `cargo xtask bench matmul-8bit [--sizes S,...] [--out DIR]`: the quantized matmuls
/// (`bench_matmul_8bit`), then, when `python3` can import torch, cuBLASLt's 8-bit GEMMs through
/// PyTorch on the same shapes (`scripts/torch_8bit_bench.py`).
fn bench_matmul_8bit(rest: &[String]) -> Result<()> {
    let mut args = vec!["--out".to_string(), root().join("target/bench").to_string_lossy().to_string()];
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match (a.as_str(), it.next()) {
            ("--out", Some(dir)) => args[1] = dir.clone(),
            ("--sizes", Some(s)) => args.extend(["--sizes".to_string(), s.clone()]),
            _ => bail!("usage: cargo xtask bench matmul-8bit [--sizes 1024,2048,...] [--out DIR]"),
        }
    }
    if !build_ptx_for_gpu()? {
        bail!("`cargo xtask bench matmul-8bit` needs a GPU (nvidia-smi found none)");
    }
    cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "bench_matmul_8bit", "--"], &args)?;
    if !python_has_triton() {
        println!("bench matmul-8bit: python3 cannot import torch and triton; cuBLASLt's numbers are left out");
        return Ok(());
    }
    python_script("torch_8bit_bench.py", &args)
}

/// `cargo xtask bench attention [--max-ctx N] [--out DIR]`: flash-attention forward
/// (`bench_attention`), then, when `python3` can import Triton, a Triton kernel after its
/// tutorial and PyTorch's `scaled_dot_product_attention` on the same shapes
/// (`scripts/triton_attention_bench.py`) and the table of ratios (`scripts/attention_compare.py`).
fn bench_attention(rest: &[String]) -> Result<()> {
    let (mut out, mut max_ctx) = (root().join("target/bench"), None::<String>);
    let mut args = rest.iter();
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--out", Some(dir)) => out = PathBuf::from(dir),
            ("--max-ctx", Some(n)) => max_ctx = Some(n.clone()),
            _ => bail!("usage: cargo xtask bench attention [--max-ctx N] [--out DIR]"),
        }
    }
    if !build_ptx_for_gpu()? {
        bail!("`cargo xtask bench attention` needs a GPU (nvidia-smi found none)");
    }
    let out_s = out.to_string_lossy().to_string();
    let mut args = vec!["--out".to_string(), out_s.clone()];
    args.extend(max_ctx.iter().flat_map(|n| ["--max-ctx".to_string(), n.clone()]));
    cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "bench_attention", "--"], &args)?;
    if !python_has_triton() {
        println!("bench attention: python3 cannot import triton and torch; Triton's and PyTorch's numbers are left out");
        return Ok(());
    }
    python_script("triton_attention_bench.py", &args)?;
    let md = out.join("attention-compare.md").to_string_lossy().to_string();
    python_script("attention_compare.py", &[out_s.clone(), out_s, "--out".into(), md])
}

/// `cargo xtask bench linear [--sizes S,...] [--shapes MxNxK,...] [--layouts nn,nt] [--out DIR]`:
/// the fused bf16 linear layer with bias and GELU (`bench_linear`), then, when `python3` can
/// import Triton, PyTorch (cuBLAS alone, and followed by separate bias and GELU kernels) and
/// Triton's tutorial matmul with the same epilogue on the same shapes
/// (`scripts/triton_linear_bench.py`) and the table of ratios (`scripts/linear_compare.py`).
fn bench_linear(rest: &[String]) -> Result<()> {
    let mut out = root().join("target/bench");
    let mut pass = Vec::new();
    let mut args = rest.iter();
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--out", Some(dir)) => out = PathBuf::from(dir),
            (flag @ ("--sizes" | "--shapes" | "--layouts"), Some(v)) => pass.extend([flag.to_string(), v.clone()]),
            _ => bail!("usage: cargo xtask bench linear [--sizes 2048,4096,...] [--shapes MxNxK,...] [--layouts nn,nt] [--out DIR]"),
        }
    }
    if !build_ptx_for_gpu()? {
        bail!("`cargo xtask bench linear` needs a GPU (nvidia-smi found none)");
    }
    let out_s = out.to_string_lossy().to_string();
    let mut args = pass.clone();
    args.extend(["--out".to_string(), out_s.clone()]);
    cargo(&["run", "--release", "--quiet", "-p", "examples", "--example", "bench_linear", "--"], &args)?;
    if !python_has_triton() {
        println!("bench linear: python3 cannot import triton and torch; Triton's and PyTorch's numbers are left out");
        return Ok(());
    }
    python_script("triton_linear_bench.py", &args)?;
    let md = out.join("linear-compare.md").to_string_lossy().to_string();
    python_script("linear_compare.py", &[out_s.clone(), out_s, "--out".into(), md])
}

/// Builds the PTX for the first GPU's architecture, when there is a GPU; says whether there is.
fn build_ptx_for_gpu() -> Result<bool> {
    let Some(arch) = gpu_arch() else { return Ok(false) };
    ptx::build_ptx(&root(), &ptx::Options::parse(&root(), &["--arch".to_string(), arch])?)?;
    Ok(true)
}

/// The PTX architecture of the first GPU, when `nvidia-smi` reports one.
fn gpu_arch() -> Option<String> {
    let out = std::process::Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let cap = String::from_utf8_lossy(&out.stdout).lines().next()?.trim().to_string();
    Some(match cap.as_str() {
        "9.0" => "sm_90a".to_string(),
        c if c.starts_with('8') => "sm_80".to_string(),
        c if c.starts_with('9') || c.starts_with("10") || c.starts_with("12") => "sm_90".to_string(),
        _ => "sm_80".to_string(),
    })
}

/// The repository root (xtask's parent directory).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lies inside the repository").to_path_buf()
}

fn cargo(args: &[&str], extra: &[String]) -> Result<()> {
    cargo_with_env(args, extra, &[])
}

fn cargo_with_env(args: &[&str], extra: &[String], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(args)
        .args(extra)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
