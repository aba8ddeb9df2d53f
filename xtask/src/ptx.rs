//! `cargo xtask build-ptx`: device crates → PTX, validated by `ptxas`, with a manifest, in
//! `target/ptx/<arch>/<crate>.{ptx,cubin,manifest.json}`. The pipeline itself is the library
//! `kernel-build` ([`kernel_build::pipeline`]), which downstream crates call from their build
//! scripts; this module parses the options and lays the outputs out in the repository.

use anyhow::{bail, ensure, Context, Result};
use kernel_build::ptxas::Ptxas;
use kernel_build::toolchain::Toolchain;
use kernel_build::{Job, ARCHS, DEFAULT_ARCH};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Device crates built when no `--crate` is given, relative to the repository root.
pub const DEFAULT_CRATES: &[&str] = &["examples", "tests", "xtask/ptx-smoke"];

/// `build-ptx` options: `[--arch ARCH]... [--crate PATH]... [--kernel NAME]... [--lenient]`.
pub struct Options {
    pub archs: Vec<String>,
    /// Crate directories (holding `Cargo.toml`).
    pub crates: Vec<PathBuf>,
    /// Spills and performance advisories are warnings, not errors (generated test corpora).
    pub lenient: bool,
    /// Only these kernels' entries (empty: every kernel's).
    pub kernels: Vec<String>,
}

impl Options {
    /// Parses `[--arch ARCH]... [--crate PATH]... [--kernel NAME]... [--release] [--lenient]`.
    pub fn parse(root: &Path, args: &[String]) -> Result<Options> {
        let mut archs = Vec::new();
        let mut crates = Vec::new();
        let mut lenient = false;
        let mut kernels = Vec::new();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = || -> Result<String> {
                match inline.clone() {
                    Some(v) => Ok(v),
                    None => it.next().cloned().with_context(|| format!("{flag} needs a value")),
                }
            };
            match flag {
                "--arch" => {
                    let a = value()?;
                    if a == "all" {
                        archs.extend(ARCHS.iter().map(|s| s.to_string()));
                    } else if ARCHS.contains(&a.as_str()) {
                        archs.push(a);
                    } else {
                        bail!("unknown architecture `{a}` (expected one of {}, or all)", ARCHS.join(", "));
                    }
                }
                "--crate" => {
                    let dir = PathBuf::from(value()?);
                    ensure!(dir.join("Cargo.toml").is_file(), "--crate {}: no Cargo.toml there", dir.display());
                    crates.push(dir.canonicalize()?);
                }
                // Device code is always built in release (debug PTX is ~1 MB and serializes
                // wgmma); the flag is accepted so that habits from cargo do not error.
                "--release" => {}
                "--lenient" => lenient = true,
                "--kernel" => {
                    let k = value()?;
                    ensure!(!k.is_empty() && k.chars().all(|c| c.is_alphanumeric() || c == '_'), "--kernel {k:?}: expected the name of a `#[kernel]` function");
                    kernels.push(k);
                }
                other => bail!("build-ptx: unknown argument `{other}`"),
            }
        }
        if archs.is_empty() {
            archs.push(DEFAULT_ARCH.to_string());
        }
        archs.dedup();
        if crates.is_empty() {
            for c in DEFAULT_CRATES {
                crates.push(root.join(c));
            }
        }
        Ok(Options { archs, crates, lenient, kernels })
    }
}

/// Builds, links, validates and describes every crate for every architecture.
pub fn build_ptx(root: &Path, opts: &Options) -> Result<()> {
    let start = Instant::now();
    let toolchain = Toolchain::ensure()?;
    let ptxas = Ptxas::locate(&root.join(".venv"))?;
    eprintln!("build-ptx: {} | ptxas {} ({})", toolchain.version, ptxas.version, ptxas.path.display());
    // Before anything builds: a crate that cannot build for the GPU says what it lacks.
    for krate in &opts.crates {
        kernel_build::check::check_crate(toolchain.cargo(), krate, false)?;
    }
    // Architectures build side by side; the crates of one architecture (one target directory)
    // in turn.
    let jobs: Vec<Job> = opts
        .archs
        .iter()
        .flat_map(|arch| {
            let dir = root.join("target/ptx").join(arch);
            opts.crates.iter().map(move |krate| Job {
                krate: krate.clone(),
                arch: arch.clone(),
                lenient: opts.lenient,
                kernels: opts.kernels.clone(),
                target_dir: dir.clone(),
                out_dir: dir.clone(),
            })
        })
        .collect();
    kernel_build::build_all(&toolchain, &ptxas, &jobs).context("build-ptx failed")?;
    eprintln!("build-ptx: done in {:.1}s", start.elapsed().as_secs_f64());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_parsed_and_checked() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the repository");
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let o = Options::parse(root, &args(&["--kernel", "matmul_kernel", "--kernel=softmax_kernel"])).unwrap();
        assert_eq!(o.kernels, ["matmul_kernel", "softmax_kernel"]);
        assert!(Options::parse(root, &args(&[])).unwrap().kernels.is_empty());
        let err = Options::parse(root, &args(&["--kernel", "a b"])).err().expect("a bad name is refused");
        assert!(err.to_string().contains("expected the name of a `#[kernel]` function"), "{err}");
    }
}
