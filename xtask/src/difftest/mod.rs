//! `cargo xtask difftest`: the CPU and GPU backends must agree on random valid kernels.
//!
//! The generator ([`gen`]) writes `--kernels N` kernels from `--seed S` into crates of at most
//! `--batch B` kernels each under `target/difftest/` (each crate: the kernels, the host code
//! that launches each one with reproducible inputs and poisoned outputs, and the runner
//! `runner.rs` as its binary). Each crate is built for the host and, with `--ptx` or when a GPU
//! is present, to PTX for sm_90a (validated by ptxas like every kernel). Then, unless
//! `--no-run`, the runner runs every kernel on the CPU backend and on the GPU when there is
//! one, and compares. `--bundle` copies the runners and their PTX to
//! `target/difftest/bundle/` for a GPU machine without Rust (`scripts/gpu-check.sh` runs them).

pub mod gen;

use anyhow::{bail, Context, Result};
use gen::{Case, Fill};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `difftest` options.
pub struct Options {
    pub kernels: usize,
    pub seed: u64,
    pub batch: usize,
    pub ptx: bool,
    pub run: bool,
    pub bundle: bool,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options> {
        let mut o = Options { kernels: 40, seed: 1, batch: 400, ptx: false, run: true, bundle: false };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut num = |what: &str| -> Result<u64> {
                let v = it.next().with_context(|| format!("{what} needs a value"))?;
                v.parse().with_context(|| format!("{what} {v}: expected a number"))
            };
            match a.as_str() {
                "--kernels" => o.kernels = num("--kernels")? as usize,
                "--seed" => o.seed = num("--seed")?,
                "--batch" => o.batch = (num("--batch")? as usize).max(1),
                "--ptx" => o.ptx = true,
                "--no-run" => o.run = false,
                "--bundle" => o.bundle = true,
                other => bail!("difftest: unknown argument `{other}`"),
            }
        }
        Ok(o)
    }
}

/// Generates, builds and (unless `--no-run`) runs the corpus.
pub fn difftest(root: &Path, opts: &Options, gpu_arch: Option<String>) -> Result<()> {
    let dir = root.join("target/difftest");
    let mut crates = Vec::new();
    let mut start = 0;
    while start < opts.kernels {
        let end = (start + opts.batch).min(opts.kernels);
        let name = format!("difftest_s{}_{start}_{end}", opts.seed);
        let cases: Vec<Case> = (start..end).map(|i| gen::case(opts.seed, i)).collect();
        let krate = dir.join(&name);
        write_crate(root, &krate, &name, &cases)?;
        crates.push((name, krate));
        start = end;
    }
    let arch = if opts.ptx || opts.bundle { Some("sm_90a".to_string()) } else { gpu_arch };
    for (name, krate) in &crates {
        build_host(root, krate).with_context(|| format!("building {name} for the host"))?;
        if let Some(arch) = &arch {
            // Up to date after a no-op cargo build when neither the kernels nor the macro
            // changed (build-ptx keys its later steps on the rlibs' contents).
            // Generated kernels may spill or serialize `wgmma`: slow, not wrong.
            let args = ["--arch".to_string(), arch.clone(), "--crate".to_string(), krate.display().to_string(), "--lenient".to_string()];
            crate::ptx::build_ptx(root, &crate::ptx::Options::parse(root, &args)?)?;
        }
    }
    if opts.bundle {
        bundle(root, &crates)?;
    }
    if !opts.run {
        return Ok(());
    }
    let mut failed = Vec::new();
    for (name, krate) in &crates {
        let exe = runner_path(root, name);
        let mut cmd = Command::new(&exe);
        if let Some(arch) = &arch {
            cmd.env("KERNEL_PTX_DIR", root.join("target/ptx").join(arch));
        } else {
            cmd.arg("--cpu-only");
        }
        let status = cmd.status().with_context(|| format!("running {}", exe.display()))?;
        if !status.success() {
            failed.push(krate.display().to_string());
        }
    }
    if !failed.is_empty() {
        bail!("difftest: the backends disagree or a kernel failed in {}", failed.join(", "));
    }
    Ok(())
}

fn runner_path(root: &Path, name: &str) -> PathBuf {
    target_dir(root).join("debug").join(name)
}

/// The generated crates share the workspace's target directory, so their dependencies
/// (kernel-runtime and the rest, same versions from the copied `Cargo.lock`, same profiles)
/// are the workspace's own builds.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

fn build_host(root: &Path, krate: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--bins", "--manifest-path"])
        .arg(krate.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir(root))
        .status()?;
    if !status.success() {
        bail!("cargo build failed ({status})");
    }
    Ok(())
}

fn bundle(root: &Path, crates: &[(String, PathBuf)]) -> Result<()> {
    let out = root.join("target/difftest/bundle");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("ptx"))?;
    for (name, _) in crates {
        std::fs::copy(runner_path(root, name), out.join(name))?;
        for ext in ["ptx", "cubin", "manifest.json"] {
            let f = root.join("target/ptx/sm_90a").join(format!("{name}.{ext}"));
            std::fs::copy(&f, out.join("ptx").join(format!("{name}.{ext}"))).with_context(|| format!("copying {}", f.display()))?;
        }
    }
    println!("difftest: bundle in {}", out.display());
    Ok(())
}

/// Writes one crate: `Cargo.toml` (its own workspace; the repository's lock file and
/// profiles), `src/lib.rs` (the kernels, for the host and nvptx64), `src/cases.rs` (how to
/// launch each) and `src/main.rs` (the runner).
fn write_crate(root: &Path, dir: &Path, name: &str, cases: &[Case]) -> Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    let manifest = format!(
        r#"[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
kernel-std = {{ path = "{root}/kernel-std" }}

[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]
kernel-runtime = {{ path = "{root}/kernel-runtime" }}

[[bin]]
name = "{name}"
path = "src/main.rs"

[workspace]

[profile.dev.package."*"]
opt-level = 1
"#,
        root = root.display()
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))?;
    let mut lib = String::from(
        "//! Generated by `cargo xtask difftest`: random valid kernels.\n#![cfg_attr(target_arch = \"nvptx64\", no_std, feature(abi_ptx))]\n#![allow(non_snake_case, unused_parens, unused_mut, unused_variables)]\n\nuse kernel_std::prelude::*;\n\n",
    );
    for c in cases {
        lib += &c.kernel;
        lib += "\n";
    }
    write_if_changed(&dir.join("src/lib.rs"), &lib)?;
    write_if_changed(&dir.join("src/cases.rs"), &cases_source(name, cases))?;
    write_if_changed(&dir.join("src/main.rs"), include_str!("runner.rs"))?;
    Ok(())
}

/// Leaves an unchanged file alone, so that rebuilding the same corpus is a no-op.
fn write_if_changed(path: &Path, text: &str) -> Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// `src/cases.rs`: one `run_<kernel>` function per case and the `CASES` table.
fn cases_source(krate: &str, cases: &[Case]) -> String {
    let mut s = String::from("//! Generated by `cargo xtask difftest`: how to launch each kernel.\n#![allow(clippy::all, unused_imports, unused_variables)]\n\nuse crate::{input, poisoned, read, Case, Fill};\nuse kernel_runtime::{bf16, f16, Device};\n\n");
    for c in cases {
        // Inputs depend on the kernel's index in the whole corpus, not in its crate.
        let i = &c.name[1..];
        let _ = writeln!(s, "fn run_{}(dev: &Device) -> Result<Vec<Vec<f64>>, String> {{\n    {}", c.name, c.sizes);
        for (j, b) in c.bufs.iter().enumerate() {
            let t = b.ty.name();
            if b.output {
                let _ = writeln!(s, "    let {} = poisoned::<{t}>(dev, {})?;", b.name, b.len);
            } else {
                let fill = match b.fill {
                    Fill::Ints(m) => format!("Fill::Ints({m})"),
                    Fill::Reals(lo, hi) => format!("Fill::Reals({lo:?}, {hi:?})"),
                };
                let _ = writeln!(s, "    let {} = input::<{t}>(dev, {}, {fill}, {i}, {j})?;", b.name, b.len);
            }
        }
        let bufs: Vec<String> = c.bufs.iter().map(|b| format!("&{}", b.name)).collect();
        let mut args = bufs.clone();
        args.extend(c.args.iter().cloned());
        args.extend(c.metas.iter().cloned());
        let _ = writeln!(s, "    {krate}::{}::launch({}, {}).map_err(|e| e.to_string())?;", c.name, c.grid, args.join(", "));
        let _ = writeln!(s, "    dev.synchronize().map_err(|e| e.to_string())?;");
        let outs: Vec<String> = c.bufs.iter().filter(|b| b.output).map(|b| format!("read(&{})?", b.name)).collect();
        let _ = writeln!(s, "    Ok(vec![{}])\n}}\n", outs.join(", "));
    }
    s += "pub static CASES: &[Case] = &[\n";
    for c in cases {
        let tol: Vec<String> = c.tol.iter().map(|(r, sc)| format!("({r:?}, {sc:?})")).collect();
        let _ = writeln!(
            s,
            "    Case {{ name: \"{}\", family: \"{}\", exact: {}, run: run_{}, tol: &[{}] }},",
            c.name,
            c.family,
            c.exact,
            c.name,
            tol.join(", ")
        );
    }
    s += "];\n";
    s
}

#[cfg(test)]
mod tests {
    use super::gen;

    /// A seed names a corpus: the same kernels every time.
    #[test]
    fn generation_is_deterministic() {
        for i in 0..50 {
            assert_eq!(gen::case(7, i).kernel, gen::case(7, i).kernel);
        }
        assert_ne!(gen::case(7, 3).kernel, gen::case(8, 3).kernel);
    }

    /// Every family appears, both kinds of kernel appear, and every kernel has an output with
    /// a tolerance.
    #[test]
    fn corpus_covers_every_family() {
        let cases: Vec<gen::Case> = (0..200).map(|i| gen::case(1, i)).collect();
        for f in ["map", "tile", "dot"] {
            assert!(cases.iter().filter(|c| c.family == f).count() > 20, "family {f}");
        }
        assert!(cases.iter().any(|c| c.exact) && cases.iter().any(|c| !c.exact));
        for c in &cases {
            let outs = c.bufs.iter().filter(|b| b.output).count();
            assert!(outs > 0 && outs == c.tol.len(), "{}", c.kernel);
            assert!(c.kernel.contains(&format!("pub fn {}<", c.name)));
        }
    }
}
