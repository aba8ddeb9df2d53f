//! What a crate needs to build for the GPU, checked before the device build, and the
//! explanation of a device build that failed because the crate or a dependency needs `std`.
//!
//! A kernel crate builds twice: for the host (the launchers, the CPU backend, `kernel-runtime`)
//! and for `nvptx64-nvidia-cuda` (one entry point per kernel instance, `no_std`). So
//!
//! - its root must drop `std` and enable the PTX calling convention on the device:
//!   `#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]` ([`ROOT_ATTR`]);
//! - host-only dependencies (`kernel-runtime` and anything that needs `std`) belong under
//!   `[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]` ([`HOST_TABLE`]);
//! - with embedding ([`crate::Builder`]), the root invokes `kernel_std::embed_ptx!();`.
//!
//! The first two are read from `cargo metadata --no-deps` and the root file, before anything
//! is built; what they cannot know (a third-party dependency that needs `std`) is recognised in
//! the device build's errors ([`diagnose`]).

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The attribute a kernel crate's root needs.
pub const ROOT_ATTR: &str = r#"#![cfg_attr(target_arch = "nvptx64", no_std, feature(abi_ptx))]"#;
/// The dependency table for host-only dependencies.
pub const HOST_TABLE: &str = r#"[target.'cfg(not(target_arch = "nvptx64"))'.dependencies]"#;
/// The line that embeds the built PTX in the crate ([`crate::Builder`]).
pub const EMBED_LINE: &str = "kernel_std::embed_ptx!();";
/// This project's crates that need `std`: never built for the device.
const HOST_ONLY: &[&str] = &["kernel-runtime", "kernel-bench", "kernel-formats", "kernel-build"];

/// The package a crate directory holds, from `cargo metadata`.
#[derive(Clone, Debug)]
pub struct CrateInfo {
    /// Package name (`kernel-crate`).
    pub package: String,
    /// Library target name (`kernel_crate`): names the PTX.
    pub lib_name: String,
    /// The library's root file (`src/lib.rs`).
    pub root: PathBuf,
}

/// Reads the package in `krate` (with `cargo`, a [`crate::toolchain::Toolchain::cargo`]
/// command) and checks what a device build needs; `embed`: also the `embed_ptx!` line.
///
/// # Errors
/// A missing library target, root attribute, `embed_ptx!` line, or a host-only dependency
/// built for the device, each saying exactly what to add or move; or `cargo metadata` failing.
pub fn check_crate(mut cargo: std::process::Command, krate: &Path, embed: bool) -> Result<CrateInfo> {
    let manifest = krate.join("Cargo.toml");
    let out = cargo
        .args(["metadata", "--no-deps", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata --manifest-path {} failed:\n{}", manifest.display(), String::from_utf8_lossy(&out.stderr).trim_end());
    }
    let meta: Value = serde_json::from_slice(&out.stdout).context("reading cargo metadata's output")?;
    let manifest = manifest.canonicalize().with_context(|| format!("{}", manifest.display()))?;
    let package = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["manifest_path"].as_str().is_some_and(|m| Path::new(m) == manifest))
        .with_context(|| format!("cargo metadata lists no package for {}", manifest.display()))?;
    let info = crate_info(package, &manifest)?;
    let mut problems = Vec::new();
    let host_only = host_only_deps(package);
    if !host_only.is_empty() {
        problems.push(format!(
            "{} builds host-only dependencies for the GPU too (where there is no `std`): move {} from [dependencies] to\n\n{HOST_TABLE}\n{}\n",
            manifest.display(),
            host_only.iter().map(|(n, _)| format!("`{n}`")).collect::<Vec<_>>().join(", "),
            host_only.iter().map(|(_, line)| line.as_str()).collect::<Vec<_>>().join("\n"),
        ));
    }
    let root_text = std::fs::read_to_string(&info.root).with_context(|| format!("reading {}", info.root.display()))?;
    problems.extend(check_root(&root_text, embed).into_iter().map(|p| format!("{}: {p}", info.root.display())));
    if !problems.is_empty() {
        bail!("{} is not ready for a device build:\n{}", krate.display(), problems.join("\n"));
    }
    Ok(info)
}

fn crate_info(package: &Value, manifest: &Path) -> Result<CrateInfo> {
    let lib = package["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "lib" || k == "rlib")))
        .with_context(|| {
            format!(
                "{} has no library target: the kernels of a crate are built for the GPU from its library, so put them in src/lib.rs",
                manifest.display()
            )
        })?;
    Ok(CrateInfo {
        package: package["name"].as_str().unwrap_or_default().to_string(),
        lib_name: lib["name"].as_str().unwrap_or_default().replace('-', "_"),
        root: PathBuf::from(lib["src_path"].as_str().unwrap_or_default()),
    })
}

/// The project's host-only crates among the package's dependencies that are built for every
/// target, with a `Cargo.toml` line for each (as `cargo metadata` describes it).
fn host_only_deps(package: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for dep in package["dependencies"].as_array().into_iter().flatten() {
        let name = dep["rename"].as_str().or_else(|| dep["name"].as_str()).unwrap_or_default();
        let normal = dep["kind"].is_null();
        let every_target = dep["target"].is_null();
        if normal && every_target && HOST_ONLY.contains(&dep["name"].as_str().unwrap_or_default()) {
            found.push((name.to_string(), dependency_line(dep)));
        }
    }
    found
}

/// `kernel-runtime = { version = "^0.1.0", path = "../kernel-runtime", default-features = false }`.
fn dependency_line(dep: &Value) -> String {
    let mut fields = Vec::new();
    if let Some(req) = dep["req"].as_str().filter(|r| *r != "*") {
        fields.push(format!("version = {:?}", req));
    }
    if let Some(path) = dep["path"].as_str() {
        fields.push(format!("path = {:?}", path));
    }
    if dep["rename"].is_string() {
        fields.push(format!("package = {:?}", dep["name"].as_str().unwrap_or_default()));
    }
    if dep["uses_default_features"] == false {
        fields.push("default-features = false".into());
    }
    let features: Vec<String> =
        dep["features"].as_array().into_iter().flatten().filter_map(|f| f.as_str()).map(|f| format!("{f:?}")).collect();
    if !features.is_empty() {
        fields.push(format!("features = [{}]", features.join(", ")));
    }
    if dep["optional"] == true {
        fields.push("optional = true".into());
    }
    let name = dep["rename"].as_str().or_else(|| dep["name"].as_str()).unwrap_or_default();
    format!("{name} = {{ {} }}", fields.join(", "))
}

/// The inner attributes of a crate root, without whitespace (`cfg_attr(target_arch="nvptx64",no_std)`).
fn inner_attributes(text: &str) -> Vec<String> {
    let mut attrs = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("#![") {
        let body = &rest[at + 3..];
        let mut depth = 1usize;
        let mut end = None;
        for (i, c) in body.char_indices() {
            match c {
                '[' | '(' => depth += 1,
                ']' | ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        attrs.push(body[..end].chars().filter(|c| !c.is_whitespace()).collect());
        rest = &body[end..];
    }
    attrs
}

/// What the crate root lacks, one sentence each with the line to add.
fn check_root(text: &str, embed: bool) -> Vec<String> {
    let attrs = inner_attributes(text);
    let no_std = attrs.iter().any(|a| a == "no_std" || (a.starts_with("cfg_attr(") && a.contains("no_std")));
    let abi_ptx = attrs.iter().any(|a| a.contains("feature(") && a.contains("abi_ptx"));
    let mut problems = Vec::new();
    if !no_std || !abi_ptx {
        let lacks = match (no_std, abi_ptx) {
            (false, false) => "builds with `std` and without the PTX calling convention on the GPU",
            (false, true) => "builds with `std` on the GPU, which has none",
            _ => "does not enable the PTX calling convention (`abi_ptx`) on the GPU",
        };
        problems.push(format!("the crate root {lacks}: add this line at the top of the file:\n\n{ROOT_ATTR}\n"));
    }
    let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    if embed && !code.contains("embed_ptx!") {
        problems.push(format!(
            "the build script embeds the kernels' PTX, which the crate root includes with this line (after the attributes):\n\n{EMBED_LINE}\n"
        ));
    }
    problems
}

/// Explains a failed device build from cargo's stderr, when the cause is known: the crate or a
/// dependency needs `std` (rustc: "can't find crate for `std`"), or the crate lacks `abi_ptx`.
pub fn diagnose(stderr: &[String], krate: &Path) -> Option<String> {
    let own = package_name(krate);
    let failed: Vec<String> = stderr
        .iter()
        .filter_map(|l| l.split_once("could not compile `").and_then(|(_, r)| r.split('`').next()).map(str::to_string))
        .collect();
    let mut why = Vec::new();
    if stderr.iter().any(|l| l.contains("can't find crate for `std`")) {
        let (own_failed, deps): (Vec<&String>, Vec<&String>) = failed.iter().partition(|f| Some(f.as_str()) == own.as_deref());
        if !own_failed.is_empty() || failed.is_empty() {
            why.push(format!(
                "the crate needs `std`, which the GPU target does not have: add this line at the top of its root (src/lib.rs):\n\n{ROOT_ATTR}\n"
            ));
        }
        if !deps.is_empty() {
            let list = deps.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ");
            why.push(format!(
                "{list} need(s) `std`, which the GPU target does not have, and {} builds it for the GPU through a dependency in \
                 [dependencies] (`cargo tree -i {}` shows which): move host-only dependencies to\n\n{HOST_TABLE}\n",
                krate.join("Cargo.toml").display(),
                deps[0]
            ));
        }
    }
    if stderr.iter().any(|l| l.contains("\"ptx-kernel\" ABI is experimental")) {
        why.push(format!("the crate does not enable the PTX calling convention on the GPU: add this line at the top of its root:\n\n{ROOT_ATTR}\n"));
    }
    (!why.is_empty()).then(|| why.join("\n"))
}

/// `name = "..."` of the `[package]` table of `krate/Cargo.toml`.
fn package_name(krate: &Path) -> Option<String> {
    let text = std::fs::read_to_string(krate.join("Cargo.toml")).ok()?;
    let mut in_package = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package {
            if let Some(v) = line.strip_prefix("name").map(str::trim_start).and_then(|r| r.strip_prefix('=')) {
                return Some(v.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_attribute_is_required_in_either_spelling() {
        assert!(check_root("#![cfg_attr(target_arch = \"nvptx64\", no_std, feature(abi_ptx))]\npub mod k;", false).is_empty());
        // ptx-smoke's: no_std everywhere, the features on the device.
        let smoke = "//! doc\n#![no_std]\n#![cfg_attr(target_arch = \"nvptx64\", feature(abi_ptx, asm_experimental_arch, stdarch_nvptx))]\n";
        assert!(check_root(smoke, false).is_empty());
        let p = check_root("pub mod k;\n", false);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("with `std` and without the PTX calling convention") && p[0].contains(ROOT_ATTR), "{}", p[0]);
        let p = check_root("#![cfg_attr(target_arch = \"nvptx64\", feature(abi_ptx))]\n", false);
        assert!(p[0].contains("builds with `std` on the GPU") && p[0].contains(ROOT_ATTR), "{}", p[0]);
        let p = check_root("#![cfg_attr(target_arch = \"nvptx64\", no_std)]\n", false);
        assert!(p[0].contains("abi_ptx") && p[0].contains(ROOT_ATTR), "{}", p[0]);
    }

    #[test]
    fn embedding_needs_the_embed_line() {
        let root = format!("{ROOT_ATTR}\n");
        let p = check_root(&root, true);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains(EMBED_LINE));
        assert!(check_root(&format!("{root}// {EMBED_LINE}\n"), true).len() == 1, "a comment does not count");
        assert!(check_root(&format!("{root}kernel_std::embed_ptx!();\n"), true).is_empty());
    }

    #[test]
    fn host_only_dependencies_for_every_target_are_named_with_their_line() {
        let package = serde_json::json!({
            "dependencies": [
                { "name": "kernel-std", "req": "^0.1.0", "kind": null, "target": null, "path": "/r/kernel-std", "features": [], "uses_default_features": true, "optional": false },
                { "name": "kernel-runtime", "req": "^0.1.0", "kind": null, "target": null, "path": "/r/kernel-runtime", "features": ["cuda"], "uses_default_features": false, "optional": false },
                { "name": "kernel-bench", "req": "^0.1.0", "kind": null, "target": "cfg(not(target_arch = \"nvptx64\"))", "features": [], "uses_default_features": true, "optional": false },
                { "name": "kernel-build", "req": "^0.1.0", "kind": "build", "target": null, "features": [], "uses_default_features": true, "optional": false },
            ]
        });
        let found = host_only_deps(&package);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "kernel-runtime");
        assert_eq!(
            found[0].1,
            r#"kernel-runtime = { version = "^0.1.0", path = "/r/kernel-runtime", default-features = false, features = ["cuda"] }"#
        );
    }

    #[test]
    fn a_std_failure_is_explained() {
        let dir = std::env::temp_dir().join(format!("kernel-build-diagnose-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n").unwrap();
        let lines = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
        let dep = lines("error[E0463]: can't find crate for `std`\n  |\n  = note: the `nvptx64-nvidia-cuda` target may not support the standard library\nerror: could not compile `getrandom` (lib) due to 1 previous error");
        let w = diagnose(&dep, &dir).unwrap();
        assert!(w.contains("`getrandom`") && w.contains(HOST_TABLE) && w.contains("cargo tree -i getrandom"), "{w}");
        let own = lines("error[E0463]: can't find crate for `std`\nerror: could not compile `my-kernels` (lib) due to 1 previous error");
        let w = diagnose(&own, &dir).unwrap();
        assert!(w.contains(ROOT_ATTR) && !w.contains(HOST_TABLE), "{w}");
        assert_eq!(diagnose(&lines("error: could not compile `my-kernels`: mismatched types"), &dir), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn inner_attributes_are_read_across_lines() {
        let a = inner_attributes("#![cfg_attr(\n    target_arch = \"nvptx64\",\n    no_std\n)]\n#![allow(x)]\nfn f() { let v = [1]; }");
        assert_eq!(a, ["cfg_attr(target_arch=\"nvptx64\",no_std)", "allow(x)"]);
    }
}
