//! The template of a downstream kernel crate (`templates/kernel-crate`), built the way a user
//! builds theirs: copied out of the source tree (to `target/downstream/kernel-crate`, its path
//! dependencies made absolute), built with a plain `cargo build` whose build script
//! (`kernel_build::Builder`) builds and embeds the device code, then run with no
//! `KERNEL_PTX_DIR`, from another directory.
//!
//! `./x test` builds it in the `test` profile and runs it (on the CPU backend without a GPU);
//! `./x gpu-bundle` builds it in release into `target/gpu-bundle/bin/kernel-crate`, which
//! `scripts/gpu-check.sh` runs on the GPU from the binary alone.
//!
//! The host build shares the workspace's target directory and the device builds share
//! `build-ptx`'s (`KERNEL_BUILD_TARGET_DIR=target/ptx`), so what the workspace built already
//! (kernel-runtime and its dependencies, `core` and kernel-std for the GPU) is not built again;
//! the template's own sources are always fresh copies.

use anyhow::{bail, ensure, Context, Result};
use kernel_build::ptxas::Ptxas;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The template, relative to the repository root.
pub const TEMPLATE: &str = "templates/kernel-crate";
/// Its binary's name.
pub const BINARY: &str = "kernel-crate";

/// The workspace's target directory (`CARGO_TARGET_DIR`, else `target/`).
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) if !d.is_empty() => root.join(d),
        _ => root.join("target"),
    }
}

/// Copies the template to `<target>/downstream/kernel-crate` with absolute path dependencies
/// and builds it with `profile`; returns the binary. Cargo's messages (warnings) are written
/// to `log`, and are in the error when the build fails.
pub fn build_template(root: &Path, profile: &str, extra_env: &[(&str, &str)], log: &mut String) -> Result<PathBuf> {
    let target = target_dir(root);
    let copy = target.join("downstream").join("kernel-crate");
    let _ = std::fs::remove_dir_all(&copy);
    copy_tree(&root.join(TEMPLATE), &copy)?;
    let manifest = copy.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)?;
    let absolute = text.replace("path = \"../../", &format!("path = \"{}/", root.display()));
    ensure!(absolute != text, "{TEMPLATE}/Cargo.toml has no `path = \"../../...\"` dependencies to rewrite");
    std::fs::write(&manifest, absolute)?;

    let ptxas = Ptxas::locate(&root.join(".venv"))?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["build", "--quiet", "--profile", profile, "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .env("KERNEL_BUILD_TARGET_DIR", target.join("ptx"))
        .env("PTXAS", &ptxas.path)
        .envs(extra_env.iter().copied())
        // Run from the copy, as a user would, and not from this repository's root.
        .current_dir(&copy)
        .output()
        .with_context(|| format!("running {cargo} build for {}", copy.display()))?;
    log.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        bail!("building the template crate {} ({profile}) failed ({}):\n{}", copy.display(), out.status, log.trim_end());
    }
    let dir = match profile {
        "dev" | "test" => "debug",
        p => p,
    };
    let exe = target.join(dir).join(BINARY);
    ensure!(exe.is_file(), "the template's build left no binary at {}", exe.display());
    Ok(exe)
}

/// `./x test`'s step: builds the template from a fresh copy and runs it without
/// `KERNEL_PTX_DIR`, from the system's temporary directory. Returns what to print (cargo's
/// warnings, the binary's output and the timings), so that a caller running it beside other
/// work prints it in one piece.
pub fn test_template(root: &Path) -> Result<String> {
    let t = Instant::now();
    let mut report = String::new();
    let exe = build_template(root, "test", &[], &mut report)?;
    let t_build = t.elapsed();
    let t = Instant::now();
    let out = Command::new(&exe)
        .env_remove("KERNEL_PTX_DIR")
        .current_dir(std::env::temp_dir())
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    report.push_str(&stdout);
    if !out.status.success() {
        bail!("the template crate's binary failed ({}):\n{report}{}", out.status, String::from_utf8_lossy(&out.stderr).trim_end());
    }
    ensure!(
        stdout.contains("embedded device code: sm_90a") && stdout.contains("sm_80"),
        "the template binary embeds no sm_90a and sm_80 device code:\n{report}"
    );
    let _ = writeln!(
        report,
        "downstream: {TEMPLATE} built from a fresh copy ({:.1}s) and ran ({:.1}s)",
        t_build.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    Ok(report)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            if entry.file_name() == "target" {
                continue;
            }
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}
