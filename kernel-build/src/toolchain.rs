//! The pinned nightly toolchain that builds device code, and the LLVM tools shipped with it.
//!
//! The host workspace builds with the stable toolchain in `rust-toolchain.toml`; device crates
//! need nightly features (`abi_ptx`, `asm_experimental_arch`, `stdarch_nvptx`, `-Zbuild-std`).
//! We pin one dated nightly ([`NIGHTLY`]) and check its commit ([`NIGHTLY_COMMIT`]) so that a
//! PTX build is reproducible. Every call goes through `rustup run <nightly>`, which overrides
//! `rust-toolchain.toml` and the `RUSTUP_TOOLCHAIN` that `cargo xtask` inherits.
//!
//! Components: `rust-src` (for `-Zbuild-std=core`: the prebuilt `rust-std` for
//! `nvptx64-nvidia-cuda` is not downloadable from the mirror these machines use) and
//! `llvm-tools` (`llvm-link`, `opt`, `llc`, `llvm-dis`: our own link step, because the
//! `llvm-bitcode-linker` component is not downloadable either). Missing pieces are installed
//! with `rustup` (`RUSTUP_AUTO_INSTALL=0` is set on these machines, so nothing installs itself).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nightly that builds device code. Bump together with [`NIGHTLY_COMMIT`].
pub const NIGHTLY: &str = "nightly-2026-05-20";
/// `commit-hash` of [`NIGHTLY`]'s rustc (`rustc 1.97.0-nightly (e50aa6fba 2026-05-19)`, LLVM 22.1.4).
pub const NIGHTLY_COMMIT: &str = "e50aa6fba4e63ab34c72bf9acfd2c307c1155d1a";
/// rustup components the device build needs.
const COMPONENTS: [&str; 2] = ["rust-src", "llvm-tools"];

/// The installed, verified device toolchain.
pub struct Toolchain {
    /// `rustc -vV`'s first line, for the manifest and logs.
    pub version: String,
    /// Directory holding `llvm-link`, `opt`, `llc`, `llvm-dis` (from `llvm-tools`).
    pub llvm_bin: PathBuf,
    /// The toolchain's sysroot; artifacts under it are the standard library's.
    pub sysroot: PathBuf,
}

impl Toolchain {
    /// Installs [`NIGHTLY`] and its components when missing, then checks the rustc commit.
    pub fn ensure() -> Result<Toolchain> {
        let installed = rustup(&["toolchain", "list"])?;
        if !installed
            .lines()
            .any(|l| l.split_whitespace().next().is_some_and(|t| t.starts_with(&format!("{NIGHTLY}-"))))
        {
            eprintln!("build-ptx: installing toolchain {NIGHTLY} with {} (device builds)", COMPONENTS.join(", "));
            let mut args = vec!["toolchain", "install", NIGHTLY, "--profile", "minimal"];
            for c in COMPONENTS {
                args.extend(["--component", c]);
            }
            rustup_status(&args)?;
        }
        let have = rustup(&["component", "list", "--installed", "--toolchain", NIGHTLY])?;
        let missing: Vec<&str> = COMPONENTS
            .into_iter()
            .filter(|c| !have.lines().any(|l| l == *c || l.starts_with(&format!("{c}-"))))
            .collect();
        if !missing.is_empty() {
            eprintln!("build-ptx: installing {} for {NIGHTLY}", missing.join(", "));
            let mut args = vec!["component", "add", "--toolchain", NIGHTLY];
            args.extend(&missing);
            rustup_status(&args)?;
        }

        let vv = run_nightly("rustc", &["-vV"])?;
        let field = |k: &str| vv.lines().find_map(|l| l.strip_prefix(k)).map(str::trim).unwrap_or("");
        let commit = field("commit-hash:");
        if commit != NIGHTLY_COMMIT {
            bail!(
                "toolchain {NIGHTLY} is rustc commit {commit}, expected {NIGHTLY_COMMIT}\n\
                 (reinstall it with `rustup toolchain uninstall {NIGHTLY}` and rerun, or update \
                 NIGHTLY/NIGHTLY_COMMIT in kernel-build/src/toolchain.rs)"
            );
        }
        let host = field("host:").to_string();
        let version = vv.lines().next().unwrap_or_default().to_string();
        let sysroot = PathBuf::from(run_nightly("rustc", &["--print", "sysroot"])?.trim());
        let llvm_bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        for tool in ["llvm-link", "opt", "llc", "llvm-dis"] {
            if !llvm_bin.join(tool).is_file() {
                bail!(
                    "{} is missing: the llvm-tools component of {NIGHTLY} looks incomplete",
                    llvm_bin.join(tool).display()
                );
            }
        }
        Ok(Toolchain { version, llvm_bin, sysroot })
    }

    /// Path of an LLVM tool from `llvm-tools`.
    pub fn llvm(&self, tool: &str) -> PathBuf {
        self.llvm_bin.join(tool)
    }

    /// `cargo` of the pinned nightly, with the environment removed that `cargo xtask` or the
    /// cargo running a build script passes down and that would redirect or break it: a host
    /// `RUSTC` and its wrappers (`cargo clippy` sets `RUSTC_WORKSPACE_WRAPPER`), the target
    /// directory, target and flags, and what cargo sets for the build script itself
    /// (`OUT_DIR`, `TARGET`, `CARGO_CFG_*`, `CARGO_FEATURE_*`, `DEP_*`, ...), which would
    /// otherwise reach the build scripts of the device build. The jobserver (`CARGO_MAKEFLAGS`)
    /// stays, so that a device build started by a build script shares the outer build's jobs.
    pub fn cargo(&self) -> Command {
        let mut cmd = Command::new("rustup");
        cmd.args(["run", NIGHTLY, "cargo"]);
        for (var, _) in std::env::vars_os() {
            let Some(var) = var.to_str() else { continue };
            if inherited_env_breaks_device_build(var) {
                cmd.env_remove(var);
            }
        }
        cmd
    }

    /// Whether `path` lies in the toolchain's sysroot (the standard library's sources).
    pub fn in_sysroot(&self, path: &Path) -> bool {
        path.starts_with(&self.sysroot)
    }
}

/// Whether an inherited environment variable must not reach the device `cargo build`
/// ([`Toolchain::cargo`]).
pub(crate) fn inherited_env_breaks_device_build(var: &str) -> bool {
    const EXACT: &[&str] = &[
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_LINKER",
        "RUSTUP_TOOLCHAIN",
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "CARGO",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTC",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTDOC",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_ENCODED_RUSTDOCFLAGS",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
        "TARGET",
        "HOST",
        "NUM_JOBS",
        "OPT_LEVEL",
        "DEBUG",
        "PROFILE",
    ];
    const PREFIXES: &[&str] = &["CARGO_CFG_", "CARGO_FEATURE_", "CARGO_PKG_", "DEP_"];
    EXACT.contains(&var) || PREFIXES.iter().any(|p| var.starts_with(p))
}

fn run_nightly(tool: &str, args: &[&str]) -> Result<String> {
    let mut full = vec!["run", NIGHTLY, tool];
    full.extend(args);
    rustup(&full)
}

fn rustup(args: &[&str]) -> Result<String> {
    let out = Command::new("rustup")
        .args(args)
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .context("running rustup (is it installed and on PATH?)")?;
    if !out.status.success() {
        bail!("`rustup {}` failed ({}):\n{}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr));
    }
    String::from_utf8(out.stdout).context("rustup printed non-UTF-8 output")
}

fn rustup_status(args: &[&str]) -> Result<()> {
    let status = Command::new("rustup")
        .args(args)
        .env_remove("RUSTUP_TOOLCHAIN")
        .status()
        .context("running rustup (is it installed and on PATH?)")?;
    if !status.success() {
        bail!("`rustup {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_build_script_inherits_is_removed_and_the_rest_kept() {
        for var in ["RUSTC", "RUSTC_WORKSPACE_WRAPPER", "CARGO_ENCODED_RUSTFLAGS", "CARGO_TARGET_DIR", "OUT_DIR", "TARGET", "CARGO_CFG_TARGET_ARCH", "CARGO_FEATURE_CUDA", "DEP_Z_INCLUDE", "CARGO_PKG_NAME"] {
            assert!(inherited_env_breaks_device_build(var), "{var}");
        }
        for var in ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "CARGO_MAKEFLAGS", "CARGO_NET_OFFLINE", "PTXAS", "CARGO_TERM_COLOR"] {
            assert!(!inherited_env_breaks_device_build(var), "{var}");
        }
    }
}
