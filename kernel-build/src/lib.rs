//! Builds the device code of a crate of `#[kernel]`s: the pinned nightly rustc for
//! `nvptx64-nvidia-cuda`, `llvm-link`, `opt`, `llc`, then `ptxas` validation, giving per
//! architecture a PTX file, its cubin and a manifest ([`pipeline`]).
//!
//! Two callers:
//!
//! - a crate's **build script**, through [`Builder`]: `cargo build` of the crate builds its
//!   device code into `OUT_DIR` and embeds it in the binary (`kernel_std::embed_ptx!()`), so
//!   that nothing has to be found on disk at run time;
//! - `cargo xtask build-ptx` of this repository, through [`pipeline::build_crate`], which
//!   writes `target/ptx/<arch>/` for the runtime's search path.
//!
//! ```no_run
//! // build.rs of a kernel crate (with `kernel-build` under [build-dependencies])
//! fn main() -> kernel_build::Result<()> {
//!     kernel_build::Builder::new().arch("sm_90a").arch("sm_80").build()
//! }
//! ```
//!
//! What the crate itself needs ([`check`]): its root starts with
//! `#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]` and invokes
//! `kernel_std::embed_ptx!();`, `kernel-std` is a dependency for every target, and host-only
//! dependencies (`kernel-runtime`, anything that needs `std`) are under
//! `[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]`. The build fails with the exact
//! line to add when one is missing.

pub mod check;
pub mod maxnreg;
pub mod pipeline;
pub mod ptxas;
pub mod toolchain;

pub use pipeline::{build_crate, Built, Job, ARCHS, DEFAULT_ARCH, TARGET};

use anyhow::{bail, ensure, Context};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// `anyhow`'s result: a build script may return it from `main`, which prints the whole chain.
pub type Result<T, E = anyhow::Error> = anyhow::Result<T, E>;

/// Set on the device `cargo build`: a build script using [`Builder`] that runs inside it (the
/// crate's own, when the device build builds the crate) does nothing.
pub const NESTED_ENV: &str = "KERNEL_BUILD_NESTED";
/// `KERNEL_BUILD_SKIP=1`: [`Builder::build`] builds no device code and embeds nothing (the
/// runtime then searches the disk, as for crates without a build script): for CPU-only builds
/// on machines without the nightly toolchain, documentation builds, IDEs.
pub const SKIP_ENV: &str = "KERNEL_BUILD_SKIP";
/// `KERNEL_BUILD_KERNELS=softmax_kernel,add_kernel`: [`Builder::build`] compiles and embeds the
/// entries of these kernels only (the others' device code is not compiled: launching them then
/// fails with a missing entry), to try a change to one kernel of a large crate in seconds.
pub const KERNELS_ENV: &str = "KERNEL_BUILD_KERNELS";
/// Overrides the device builds' target directory ([`Builder::target_dir`]).
pub const TARGET_DIR_ENV: &str = "KERNEL_BUILD_TARGET_DIR";
/// Set by [`Builder::build`] for the crate's compilation (`cargo:rustc-env`), to the library's
/// name: `#[kernel]` then points each kernel at the modules `kernel_std::embed_ptx!()`
/// defines at the crate root.
pub const EMBEDDED_ENV: &str = "KERNEL_EMBEDDED_PTX";
/// The file in `OUT_DIR` that `kernel_std::embed_ptx!()` includes.
pub const EMBEDDED_FILE: &str = "kernel-embedded.rs";

/// Builds the device code of the crate whose build script runs it, for the chosen
/// architectures, into `OUT_DIR/ptx/<arch>/<crate>.{ptx,cubin,manifest.json}`, and writes
/// `OUT_DIR/kernel-embedded.rs`, which `kernel_std::embed_ptx!()` includes.
///
/// The device builds use a target directory of their own per architecture,
/// `<target>/kernel-build/<arch>/` beside the profile directories of the crate's target
/// directory (so `CARGO_TARGET_DIR` moves it too, and debug and release builds share it);
/// [`Builder::target_dir`] or `KERNEL_BUILD_TARGET_DIR` choose another. `ptxas` is `$PTXAS`,
/// else on `PATH`, else installed from a pip wheel into `<target>/kernel-build/.venv`.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    archs: Vec<String>,
    lenient: bool,
    target_dir: Option<PathBuf>,
}

impl Builder {
    /// No architectures yet: [`Builder::build`] builds [`DEFAULT_ARCH`] when none is added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an architecture ([`ARCHS`]: `sm_80`, `sm_90`, `sm_90a`). The runtime picks the
    /// best one the GPU runs (`sm_90a`, then `sm_90` on Hopper; `sm_80` on Ampere).
    pub fn arch(mut self, arch: &str) -> Self {
        if !self.archs.iter().any(|a| a == arch) {
            self.archs.push(arch.to_string());
        }
        self
    }

    /// Register spills and `ptxas` performance advisories warn instead of failing the build.
    pub fn lenient(mut self, lenient: bool) -> Self {
        self.lenient = lenient;
        self
    }

    /// The directory under which the device builds keep their target directories
    /// (`<dir>/<arch>/`), e.g. one shared by several crates.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// Runs in a build script: builds and embeds the device code (see [`Builder`]).
    ///
    /// Does nothing in the device build it starts itself (`KERNEL_BUILD_NESTED`, or a build
    /// for `nvptx64`), and builds nothing with `KERNEL_BUILD_SKIP=1`.
    ///
    /// # Errors
    /// Outside a build script; an unknown architecture; the crate lacking what a device build
    /// needs (the message gives the line to add); any step of the build failing.
    pub fn build(&self) -> Result<()> {
        for var in [SKIP_ENV, TARGET_DIR_ENV, KERNELS_ENV, "PTXAS"] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        if std::env::var_os(NESTED_ENV).is_some() || std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "nvptx64") {
            return Ok(());
        }
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").context("kernel_build::Builder::build runs in a build script (OUT_DIR is not set)")?);
        let krate = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").context("CARGO_MANIFEST_DIR is not set")?);
        let embedded = out_dir.join(EMBEDDED_FILE);
        if std::env::var(SKIP_ENV).is_ok_and(|v| !v.is_empty() && v != "0") {
            // The library's name, as cargo derives it from the package's by default.
            let lib_name = std::env::var("CARGO_PKG_NAME").unwrap_or_default().replace('-', "_");
            pipeline::write_atomic(&embedded, b"// KERNEL_BUILD_SKIP: no device code built.\n&[]\n")?;
            println!("cargo:rustc-env={EMBEDDED_ENV}={lib_name}");
            return Ok(());
        }
        let archs: Vec<String> = if self.archs.is_empty() { vec![DEFAULT_ARCH.to_string()] } else { self.archs.clone() };
        for a in &archs {
            ensure!(ARCHS.contains(&a.as_str()), "unknown architecture `{a}` (expected one of {})", ARCHS.join(", "));
        }
        println!("cargo:rerun-if-changed={}", krate.join("Cargo.toml").display());
        println!("cargo:rerun-if-changed={}", krate.join("src").display());

        let tc = toolchain::Toolchain::ensure()?;
        let info = check::check_crate(tc.cargo(), &krate, true)?;
        let shared = match (&self.target_dir, std::env::var_os(TARGET_DIR_ENV)) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) if !d.is_empty() => PathBuf::from(d),
            _ => default_target_dir(&out_dir),
        };
        let ptxas = ptxas::Ptxas::locate(&shared.join(".venv"))?;
        let jobs: Vec<Job> = archs
            .iter()
            .map(|arch| Job {
                krate: krate.clone(),
                arch: arch.clone(),
                lenient: self.lenient,
                kernels: kernel_list(std::env::var(KERNELS_ENV).ok().as_deref()),
                target_dir: shared.join(arch),
                out_dir: out_dir.join("ptx").join(arch),
            })
            .collect();
        let built = build_all(&tc, &ptxas, &jobs)?;
        pipeline::write_atomic(&embedded, embedded_source(&built).as_bytes())?;
        for b in &built {
            if let Some(d) = &b.dep_info {
                for source in dep_info_sources(&std::fs::read_to_string(d).unwrap_or_default()) {
                    if !tc.in_sysroot(&source) && !source.starts_with(&shared) {
                        println!("cargo:rerun-if-changed={}", source.display());
                    }
                }
            }
        }
        println!("cargo:rustc-env={EMBEDDED_ENV}={}", info.lib_name);
        Ok(())
    }
}

/// Runs `jobs` side by side, one thread per target directory: jobs with different target
/// directories (one per architecture) do not wait on each other's cargo lock, and the steps
/// after cargo are single-threaded; jobs sharing one run in turn, in the order given. Reports
/// every failure.
///
/// # Errors
/// Names every job that failed, with its error.
pub fn build_all(tc: &toolchain::Toolchain, ptxas: &ptxas::Ptxas, jobs: &[Job]) -> Result<Vec<Built>> {
    let mut groups: Vec<Vec<&Job>> = Vec::new();
    for job in jobs {
        match groups.iter_mut().find(|g| g[0].target_dir == job.target_dir) {
            Some(g) => g.push(job),
            None => groups.push(vec![job]),
        }
    }
    let run = |group: &[&Job]| -> Vec<(String, Result<Built>)> {
        group.iter().map(|job| (format!("{} for {}", job.krate.display(), job.arch), build_crate(tc, ptxas, job))).collect()
    };
    let results: Vec<(String, Result<Built>)> = std::thread::scope(|s| {
        let handles: Vec<_> = groups.iter().map(|g| (g, s.spawn(|| run(g)))).collect();
        handles
            .into_iter()
            .flat_map(|(g, h)| {
                h.join().unwrap_or_else(|_| g.iter().map(|job| (format!("{} for {}", job.krate.display(), job.arch), Err(anyhow::anyhow!("the build panicked")))).collect())
            })
            .collect()
    });
    let mut built = Vec::new();
    let mut failures = String::new();
    for (what, r) in results {
        match r {
            Ok(b) => built.push(b),
            Err(e) => {
                let _ = writeln!(failures, "{what}: {e:#}");
            }
        }
    }
    if !failures.is_empty() {
        bail!("device build failed:\n{}", failures.trim_end());
    }
    Ok(built)
}

/// `<target>/kernel-build` for `OUT_DIR = <target>/[<triple>/]<profile>/build/<pkg>-<hash>/out`;
/// `OUT_DIR/kernel-build` when it is laid out otherwise.
fn default_target_dir(out_dir: &Path) -> PathBuf {
    let profile = out_dir.ancestors().find(|a| a.file_name().is_some_and(|n| n == "build")).and_then(Path::parent);
    match profile.and_then(Path::parent) {
        Some(target) => target.join("kernel-build"),
        None => out_dir.join("kernel-build"),
    }
}

/// The Rust expression `kernel_std::embed_ptx!()` includes: the modules built, by architecture.
fn embedded_source(built: &[Built]) -> String {
    let mut s = String::from("// Generated by kernel-build: the device code that kernel_std::embed_ptx!() embeds.\n&[\n");
    for b in built {
        let lit = |p: &Path| format!("{:?}", p.display().to_string());
        let _ = writeln!(
            s,
            "    ::kernel_runtime::__private::EmbeddedModule {{\n        arch: {:?},\n        path: {},\n        ptx: include_bytes!({}),\n        cubin: include_bytes!({}),\n        manifest: include_str!({}),\n    }},",
            b.arch,
            lit(&b.ptx),
            lit(&b.ptx),
            lit(&b.cubin),
            lit(&b.manifest)
        );
    }
    s.push_str("]\n");
    s
}

/// The files a Makefile-style dep-info file lists (`target: a.rs b\ c.rs`), targets excluded.
fn dep_info_sources(text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        // `path: deps`; a path may contain an escaped `\:`-free colon only on Windows drives.
        let Some(pos) = line.find(": ").or_else(|| line.strip_suffix(':').map(str::len)) else { continue };
        let deps = &line[(pos + 1).min(line.len())..];
        let mut cur = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    cur.push(' ');
                    chars.next();
                }
                ' ' | '\t' => {
                    if !cur.is_empty() {
                        out.push(PathBuf::from(std::mem::take(&mut cur)));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(PathBuf::from(cur));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The kernels a `KERNEL_BUILD_KERNELS` value names: comma-separated, blanks ignored; empty:
/// every kernel.
fn kernel_list(value: Option<&str>) -> Vec<String> {
    value.unwrap_or_default().split(',').map(str::trim).filter(|k| !k.is_empty()).map(String::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_build_kernels_is_a_comma_separated_list() {
        assert!(kernel_list(None).is_empty() && kernel_list(Some("")).is_empty());
        assert_eq!(kernel_list(Some("softmax_kernel, add_kernel,,")), ["softmax_kernel", "add_kernel"]);
    }

    #[test]
    fn the_shared_target_dir_sits_beside_the_profiles() {
        assert_eq!(default_target_dir(Path::new("/w/target/debug/build/k-0123/out")), Path::new("/w/target/kernel-build"));
        assert_eq!(
            default_target_dir(Path::new("/w/t/x86_64-unknown-linux-gnu/release/build/k-0123/out")),
            Path::new("/w/t/x86_64-unknown-linux-gnu/kernel-build")
        );
        // A `build` directory above the target directory does not confuse it.
        assert_eq!(default_target_dir(Path::new("/build/w/target/debug/build/k-1/out")), Path::new("/build/w/target/kernel-build"));
        assert_eq!(default_target_dir(Path::new("/somewhere/out")), Path::new("/somewhere/out/kernel-build"));
    }

    #[test]
    fn dep_info_lists_sources() {
        let d = "/t/release/libk.rlib: /w/k/src/lib.rs /w/my\\ dir/a.rs /w/k/src/lib.rs\n\n/w/k/src/lib.rs:\n";
        assert_eq!(dep_info_sources(d), [PathBuf::from("/w/k/src/lib.rs"), PathBuf::from("/w/my dir/a.rs")]);
    }

    #[test]
    fn the_embedded_source_names_every_file() {
        let b = Built {
            name: "k".into(),
            arch: "sm_90a".into(),
            ptx: "/o/ptx/sm_90a/k.ptx".into(),
            cubin: "/o/ptx/sm_90a/k.cubin".into(),
            manifest: "/o/ptx/sm_90a/k.manifest.json".into(),
            dep_info: None,
        };
        let s = embedded_source(&[b]);
        assert!(s.contains("arch: \"sm_90a\""), "{s}");
        assert!(s.contains("ptx: include_bytes!(\"/o/ptx/sm_90a/k.ptx\")"), "{s}");
        assert!(s.contains("cubin: include_bytes!(\"/o/ptx/sm_90a/k.cubin\")"), "{s}");
        assert!(s.contains("manifest: include_str!(\"/o/ptx/sm_90a/k.manifest.json\")"), "{s}");
        assert!(s.trim_end().ends_with(']'));
    }

    #[test]
    fn builder_collects_architectures_once() {
        let b = Builder::new().arch("sm_90a").arch("sm_80").arch("sm_90a");
        assert_eq!(b.archs, ["sm_90a", "sm_80"]);
    }
}
