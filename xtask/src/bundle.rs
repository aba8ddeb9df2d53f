//! `cargo xtask gpu-bundle`: everything a GPU machine without Rust needs to run the test
//! suite and the examples: release test binaries, example binaries and the PTX, under
//! `target/gpu-bundle/` (benchmarks in `target/gpu-bundle/bench/`), plus `scripts/gpu-check.sh` to run them (tests on the GPU,
//! compute-sanitizer memcheck/racecheck/synccheck on the examples). The template downstream
//! crate's binary, `bin/kernel-crate`, carries its own PTX ([`crate::downstream`]).

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};

/// The integration test binary (`tests/tests/suite/`), bundled as `tests/suite`.
const SUITE: &str = "suite";
/// Its subjects (modules) that run on a GPU (`KERNEL_TEST_DEVICE=cuda`), listed one a line in
/// `tests/suite.subjects` for `scripts/gpu-check.sh`, which runs each as a step of its own
/// (`suite <subject>::`).
const GPU_SUBJECTS: &[&str] = &["matmul", "batched_matmul", "kernels", "language", "numerics", "launch_errors", "tensors", "math", "atomics", "random", "scans", "reductions", "layer_norm", "softmax", "attention", "matmul_split_k", "debug", "types", "eight_bit", "matmul_8bit", "hints", "nested", "matmul_persistent", "linear"];
/// The suite's modules that test the CPU backend or the documentation only.
#[cfg(test)]
const CPU_SUBJECTS: &[&str] = &["cpu_errors", "guide"];
/// kernel-runtime's own GPU tests (`tests/cuda.rs`, also run by `KERNEL_TEST_DEVICE=cuda`), bundled as
/// `tests/runtime_cuda`.
const RUNTIME_TEST: &str = "cuda";
/// The examples (`examples/examples/`, run by `scripts/gpu-check.sh`), copied to `bin/`.
const EXAMPLES: &[&str] = &["matmul", "vector_add"];
/// The benchmark examples, in `target/gpu-bundle/bench/` (not run by `gpu-check.sh`).
const BENCHES: &[&str] = &["bench_matmul", "bench_bmm", "bench_memory", "bench_attention", "bench_matmul_8bit"];

pub fn gpu_bundle(root: &Path) -> Result<()> {
    let out = root.join("target/gpu-bundle");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("tests"))?;
    std::fs::create_dir_all(out.join("bin"))?;
    std::fs::create_dir_all(out.join("bench"))?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let args = ["test", "--release", "--no-run", "--message-format=json", "-p", "tests", "--test", SUITE].map(String::from).to_vec();
    std::fs::write(out.join("tests").join(format!("{SUITE}.subjects")), GPU_SUBJECTS.iter().map(|s| format!("{s}\n")).collect::<String>())?;
    // With `dlpack`: its GPU test (DLPack on the GPU) runs too.
    let runtime = ["test", "--release", "--no-run", "--message-format=json", "-p", "kernel-runtime", "--features", "dlpack", "--test", RUNTIME_TEST]
        .map(String::from)
        .to_vec();
    let examples = ["build", "--release", "--message-format=json", "-p", "examples", "--examples"].map(String::from).to_vec();
    for (what, args) in [("tests", args), ("runtime tests", runtime), ("examples", examples)] {
        let output = Command::new(&cargo)
            .args(&args)
            .current_dir(root)
            .env("RUSTFLAGS", "-C strip=debuginfo")
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("building the {what}"))?;
        if !output.status.success() {
            bail!("building the {what} for the GPU bundle failed");
        }
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let (Some(exe), Some(name)) = (msg["executable"].as_str(), msg["target"]["name"].as_str()) else { continue };
            let dest = if what == "tests" && name == SUITE {
                out.join("tests").join(name)
            } else if what == "runtime tests" && name == RUNTIME_TEST {
                out.join("tests").join("runtime_cuda")
            } else if what == "examples" && EXAMPLES.contains(&name) {
                out.join("bin").join(name)
            } else if what == "examples" && BENCHES.contains(&name) {
                out.join("bench").join(name)
            } else {
                continue;
            };
            std::fs::copy(exe, &dest).with_context(|| format!("copying {exe}"))?;
            println!("gpu-bundle: {}", dest.strip_prefix(root).unwrap_or(&dest).display());
        }
    }
    // The template downstream crate: its device code is in the binary (no PTX directory).
    let mut log = String::new();
    let exe = crate::downstream::build_template(root, "release", &[("RUSTFLAGS", "-C strip=debuginfo")], &mut log)?;
    eprint!("{log}");
    let dest = out.join("bin").join(crate::downstream::BINARY);
    std::fs::copy(&exe, &dest).with_context(|| format!("copying {}", exe.display()))?;
    println!("gpu-bundle: {}", dest.strip_prefix(root).unwrap_or(&dest).display());
    // Only the PTX and manifests travel (the device target directory is large).
    let ptx_out = out.join("ptx/sm_90a");
    std::fs::create_dir_all(&ptx_out)?;
    for entry in std::fs::read_dir(root.join("target/ptx/sm_90a"))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if name.ends_with(".ptx") || name.ends_with(".cubin") || name.ends_with(".manifest.json") {
            std::fs::copy(&path, ptx_out.join(&name))?;
            println!("gpu-bundle: target/gpu-bundle/ptx/sm_90a/{name}");
        }
    }
    println!("gpu-bundle: carry target/gpu-bundle; run scripts/gpu-check.sh there");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every GPU subject is a module of the suite (a filter that matches nothing runs nothing).
    #[test]
    fn gpu_subjects_are_modules_of_the_suite() {
        let main = std::fs::read_to_string(crate::root().join("tests/tests").join(SUITE).join("main.rs")).unwrap();
        for s in GPU_SUBJECTS {
            assert!(main.lines().any(|l| l == format!("mod {s};")), "tests/tests/{SUITE}/main.rs has no `mod {s};`");
        }
        // And every module is one or the other: a new subject is not left off the GPU run.
        for m in main.lines().filter_map(|l| l.strip_prefix("mod ")?.strip_suffix(';')) {
            assert!(GPU_SUBJECTS.contains(&m) || CPU_SUBJECTS.contains(&m), "module `{m}` of the suite is in neither GPU_SUBJECTS nor CPU_SUBJECTS (xtask/src/bundle.rs)");
        }
    }
}
