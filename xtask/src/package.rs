//! `cargo xtask package-check`: the library crates can be depended on.
//!
//! 1. **Packaging**: `cargo package --no-verify` of every publishable workspace member (the
//!    ones without `publish = false`), together, so that their path dependencies on each other
//!    resolve through cargo's local registry overlay: every path dependency has a version, the
//!    metadata is complete, and the files each crate needs (README, licenses, assets) are
//!    inside it. `--no-verify` skips building the packaged sources (the test suite builds the
//!    same sources); `cargo package --workspace --exclude examples --exclude tests --exclude
//!    xtask` does that too, in a few minutes.
//! 2. **One version of each dependency**: `cargo tree --duplicates` over the normal, build and
//!    dev dependencies of the host build must name no crate in two versions.
//! 3. **Without CUDA**: `kernel-runtime` builds without its default `cuda` feature (no
//!    cudarc), in the `test` profile so that it reuses the dependencies the test suite built.
//!    `./x test` leaves this step to its test suite: the compile-fail suite's crate depends on
//!    kernel-runtime without `cuda`, so trybuild builds it so and runs the `pass` cases on it
//!    (this step's check-mode build of the dependencies took 20 s of CI).

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Which checks [`package_check`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// All three (`./x package-check`).
    All,
    /// All but the build without `cuda` when the compile-fail suite, which `./x test` has run,
    /// does it ([`compile_fail_builds_kernel_runtime_without_cuda`]).
    AfterTestSuite,
}

/// Runs the checks; `Err` names what failed.
pub fn package_check(root: &Path, checks: Checks) -> Result<()> {
    let t = Instant::now();
    let crates = publishable(root)?;
    let mut args = vec!["package", "--no-verify", "--allow-dirty", "--quiet"];
    for c in &crates {
        args.extend(["-p", c.as_str()]);
    }
    run(root, &args).context("packaging the library crates")?;
    let t_package = t.elapsed();

    let t = Instant::now();
    let out = output(root, &["tree", "--duplicates", "--depth", "0", "--edges", "normal,build,dev", "--prefix", "none", "--format", "{p}"])?;
    let dups = duplicates(&out);
    if !dups.is_empty() {
        let list: Vec<String> = dups.iter().map(|(name, versions)| format!("{name} ({})", versions.join(", "))).collect();
        bail!(
            "dependencies built in several versions: {}; see `cargo tree --duplicates` (align the requirements, \
             or pin the lock file with `cargo update -p <crate> --precise <version>`)",
            list.join("; ")
        );
    }
    let t_tree = t.elapsed();

    let t = Instant::now();
    let without_cuda = if checks == Checks::AfterTestSuite && compile_fail_builds_kernel_runtime_without_cuda(root)? {
        "kernel-runtime without `cuda` compiles (the compile-fail suite built it)".to_string()
    } else {
        run(root, &["check", "--quiet", "--profile", "test", "-p", "kernel-runtime", "--no-default-features", "--lib"])
            .context("checking kernel-runtime without its `cuda` feature")?;
        format!("kernel-runtime without `cuda` compiles ({:.1}s)", t.elapsed().as_secs_f64())
    };
    eprintln!(
        "package-check: {} packaged ({:.1}s), no duplicate dependencies ({:.1}s), {without_cuda}",
        crates.join(", "),
        t_package.as_secs_f64(),
        t_tree.as_secs_f64(),
    );
    Ok(())
}

/// Whether the compile-fail crate depends on kernel-runtime without `cuda`: trybuild then
/// builds kernel-runtime so for the cases (`cargo metadata` of the workspace's manifests).
fn compile_fail_builds_kernel_runtime_without_cuda(root: &Path) -> Result<bool> {
    let meta: Value = serde_json::from_str(&output(root, &["metadata", "--no-deps", "--format-version", "1"])?)?;
    let packages = meta["packages"].as_array().context("cargo metadata: no `packages`")?;
    let Some(suite) = packages.iter().find(|p| p["name"] == "compile-fail") else { return Ok(false) };
    let deps = suite["dependencies"].as_array().context("cargo metadata: no `dependencies`")?;
    Ok(deps.iter().any(|d| {
        d["name"] == "kernel-runtime"
            && d["uses_default_features"] == false
            && d["features"].as_array().is_some_and(|f| !f.iter().any(|x| x == "cuda"))
    }))
}

/// The workspace members that may be published (no `publish = false`), by name.
fn publishable(root: &Path) -> Result<Vec<String>> {
    let meta: Value = serde_json::from_str(&output(root, &["metadata", "--no-deps", "--format-version", "1"])?)?;
    let mut names: Vec<String> = meta["packages"]
        .as_array()
        .context("cargo metadata: no `packages`")?
        .iter()
        .filter(|p| p["publish"].as_array().is_none_or(|registries| !registries.is_empty()))
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    names.sort();
    Ok(names)
}

/// The crates `cargo tree --duplicates --depth 0 --prefix none --format {p}` lists in more
/// than one version, with the versions (lines like `syn v2.0.119` or `x v0.1.0 (/path)`;
/// the same version listed twice, for two feature sets, is no duplicate).
fn duplicates(tree: &str) -> BTreeMap<String, Vec<String>> {
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in tree.lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else { continue };
        if !version.starts_with('v') {
            continue;
        }
        let v = versions.entry(name.to_string()).or_default();
        if !v.iter().any(|x| x == version) {
            v.push(version.to_string());
        }
    }
    versions.retain(|_, v| v.len() > 1);
    versions
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Runs `cargo args` in `root`, failing on a non-zero exit.
fn run(root: &Path, args: &[&str]) -> Result<()> {
    let status = cargo().current_dir(root).args(args).status().with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// The standard output of `cargo args` in `root`.
fn output(root: &Path, args: &[&str]) -> Result<String> {
    let out = cargo().current_dir(root).args(args).output().with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !out.status.success() {
        bail!("`cargo {}` failed ({}): {}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8(out.stdout)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_crates_in_two_versions() {
        let tree = "syn v2.0.119\nsyn v3.0.9\nserde_core v1.0.228\nserde_core v1.0.228\n\nkernel-runtime v0.1.0 (/work/kernel-runtime)\n";
        let d = duplicates(tree);
        assert_eq!(d.len(), 1);
        assert_eq!(d["syn"], ["v2.0.119", "v3.0.9"]);
        assert!(duplicates("").is_empty());
    }

    /// `./x test` leaves the build without `cuda` to the compile-fail suite, which does it.
    #[test]
    fn the_compile_fail_suite_builds_kernel_runtime_without_cuda() {
        assert!(compile_fail_builds_kernel_runtime_without_cuda(&crate::root()).unwrap());
    }

    /// The workspace as it is: its library crates are the publishable ones and it has no
    /// duplicate dependency (`cargo metadata` and `cargo tree` read the lock file: no build).
    #[test]
    fn the_workspace_has_its_library_crates_and_one_version_of_each_dependency() {
        let root = crate::root();
        let crates = publishable(&root).unwrap();
        assert_eq!(crates, ["kernel-bench", "kernel-build", "kernel-formats", "kernel-macros", "kernel-math", "kernel-runtime", "kernel-std"]);
        let out = output(&root, &["tree", "--offline", "--duplicates", "--depth", "0", "--edges", "normal,build,dev", "--prefix", "none", "--format", "{p}"]).unwrap();
        assert_eq!(duplicates(&out), BTreeMap::new(), "{out}");
    }
}
