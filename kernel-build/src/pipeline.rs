//! The device build of one crate for one architecture: PTX, validated by `ptxas`, with a
//! cubin and a manifest. `cargo xtask build-ptx` and [`crate::Builder`] (build scripts) run it.
//!
//! For each architecture and each device crate:
//!
//! 1. **Build** with the pinned nightly ([`crate::toolchain`]): `cargo build --release --target
//!    nvptx64-nvidia-cuda -Zbuild-std=core` with `-C target-cpu=<arch>`, in a target directory
//!    of its own, `target/ptx/<arch>/` (changing `target-cpu` rebuilds `core`, ~15 s, so each
//!    architecture keeps its own; [`Job::target_dir`]). `--message-format=json` names every rlib of the build,
//!    including `core`'s and `compiler_builtins`'. On this target rustc puts LLVM bitcode (not
//!    machine code) in the rlibs' `.rcgu.o` members, so no `--emit` flag is needed.
//! 2. **Find the entries**: link the crate's own rlibs (everything not from the toolchain's
//!    sysroot) with `llvm-link --ignore-non-bitcode` and read the `llvm-dis` text: every
//!    `define ptx_kernel` function is an entry, i.e. every `extern "ptx-kernel"` fn, which
//!    must also be `#[no_mangle]` to have a name the runtime can look up. The calling
//!    convention, not a naming rule, decides what is exported.
//! 3. **Link** that module with what it uses of the standard library's rlibs (`llvm-link
//!    --ignore-non-bitcode <own.bc> --only-needed <core, compiler_builtins rlibs>`; the flag
//!    skips the `lib.rmeta` members, and `--only-needed` pulls in only the definitions the
//!    crate reaches, which is much faster and gives the same PTX up to function order), **internalize**
//!    everything but the entries and optimize (`opt --internalize-public-api-file=<entries>
//!    --passes=internalize,globaldce,default<O3>`; internalizing before optimizing lets the
//!    optimizer drop everything the entries do not reach), then **codegen**
//!    (`llc -mcpu=<arch>`) to `<out>/<crate>.ptx` ([`Job::out_dir`]: `target/ptx/<arch>/` for
//!    `build-ptx`, `$OUT_DIR/ptx/<arch>/` for a build script).
//!    This replaces rustc's own link step for the target, which needs the
//!    `llvm-bitcode-linker` component that these machines cannot download.
//! 4. **Validate** with `ptxas -arch=<arch> -v` ([`crate::ptxas`]); any error, spill or
//!    "Potential Performance Loss" advisory (a serialized `wgmma` pipeline) fails.
//!    The cubin is kept as `<crate>.cubin`.
//! 5. **Manifest** `<out>/<crate>.manifest.json` (format on [`write_manifest`]).
//!
//! Steps 3–5 are skipped when the crate's linked bitcode (step 2, its rlibs linked in sorted
//! order), the standard library's rlibs, the tool versions and the options are those recorded
//! in `<crate>.key` by the last successful build, whose outputs then stand.
//!
//! Intermediate files (`<crate>.entries`, `<crate>.*.bc`, `<crate>.key`) stay in `<out>/link/`.

use crate::ptxas::{FunctionReport, Ptxas};
use crate::toolchain::Toolchain;
use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The device target triple.
pub const TARGET: &str = "nvptx64-nvidia-cuda";
/// Architectures `--arch` accepts. `sm_90a` PTX only assembles for `sm_90a` itself.
pub const ARCHS: [&str; 3] = ["sm_80", "sm_90", "sm_90a"];
/// Architecture built when no `--arch` is given.
pub const DEFAULT_ARCH: &str = "sm_90a";

/// One device build: a crate for an architecture.
#[derive(Clone, Debug)]
pub struct Job {
    /// The crate's directory (holding `Cargo.toml`).
    pub krate: PathBuf,
    pub arch: String,
    /// Spills and performance advisories are warnings, not errors.
    pub lenient: bool,
    /// The kernels (`#[kernel]` function names) whose entries to build; empty: all of them. The
    /// others' device code is left out by their `#[cfg]` ([`kernel_formats::ONLY_CFG`]), so
    /// that trying a change to one kernel of a large crate compiles only that kernel.
    pub kernels: Vec<String>,
    /// cargo's `--target-dir` for the device build (one per architecture).
    pub target_dir: PathBuf,
    /// Where `<crate>.{ptx,cubin,manifest.json}` go (intermediate files in `link/` below it).
    pub out_dir: PathBuf,
}

/// What one [`Job`] produced.
#[derive(Clone, Debug)]
pub struct Built {
    /// The crate's library target name (`ptx_smoke`), naming the files.
    pub name: String,
    pub arch: String,
    pub ptx: PathBuf,
    pub cubin: PathBuf,
    pub manifest: PathBuf,
    /// cargo's dep-info file of the device build (every source file it read), when it wrote one.
    pub dep_info: Option<PathBuf>,
}

/// The rlibs one `cargo build` produced.
struct Artifacts {
    /// The crate's library target name (`ptx_smoke`): names the output files.
    name: String,
    /// rlibs of the crate and its non-sysroot dependencies.
    own: Vec<PathBuf>,
    /// rlibs of `core`, `compiler_builtins`.
    std: Vec<PathBuf>,
    /// The crate's dep-info file (`lib<name>.d` beside its rlib).
    dep_info: Option<PathBuf>,
}

/// Builds, links, validates and describes `job`'s crate (the steps in the module docs).
///
/// # Errors
/// Any step failing: the device `cargo build` (with a diagnosis when the crate pulls in `std`),
/// an LLVM tool, `ptxas` (errors; spills and performance advisories unless lenient), or
/// writing the outputs.
pub fn build_crate(tc: &Toolchain, ptxas: &Ptxas, job: &Job) -> Result<Built> {
    let (krate, arch, lenient) = (job.krate.as_path(), job.arch.as_str(), job.lenient);
    let out_dir = &job.out_dir;
    let link_dir = out_dir.join("link");
    std::fs::create_dir_all(&link_dir).with_context(|| format!("creating {}", link_dir.display()))?;

    eprintln!("build-ptx: building {} for {arch}", krate.display());
    let t = Instant::now();
    let art = cargo_build(tc, krate, arch, &job.kernels, &job.target_dir)?;
    let t_build = t.elapsed();

    let t = Instant::now();
    let name = &art.name;
    let ptx_path = out_dir.join(format!("{name}.ptx"));
    // Written last, only when everything passed: a manifest never describes a failed build.
    let manifest_path = out_dir.join(format!("{name}.manifest.json"));
    let cubin_path = out_dir.join(format!("{name}.cubin"));
    // The crate's own bitcode (its rlibs and its dependencies', linked): what the later steps
    // compile. When it, the tools and the options are those of the last successful build, that
    // build's outputs stand (an edit that leaves the code as it was rebuilds nothing). Linked in
    // a fixed order (cargo reports artifacts in the order they finish), the same code gives the
    // same bitcode.
    let own_bc = link_dir.join(format!("{name}.own.bc"));
    llvm(tc, "llvm-link", |c| {
        c.arg("--ignore-non-bitcode").args(sorted(&art.own)).arg("-o").arg(&own_bc);
    })?;
    let key_path = link_dir.join(format!("{name}.key"));
    let key = build_key(&own_bc, &art, tc, ptxas, arch, lenient)?;
    let outputs = [&manifest_path, &ptx_path, &cubin_path];
    let built = Built {
        name: name.clone(),
        arch: arch.to_string(),
        ptx: ptx_path.clone(),
        cubin: cubin_path.clone(),
        manifest: manifest_path.clone(),
        dep_info: art.dep_info.clone(),
    };
    if std::fs::read_to_string(&key_path).is_ok_and(|k| k == key) && outputs.iter().all(|p| p.is_file()) {
        eprintln!(
            "build-ptx: {} is up to date ({:.1}s: cargo {:.1}s)",
            manifest_path.display(),
            (t_build + t.elapsed()).as_secs_f64(),
            t_build.as_secs_f64()
        );
        return Ok(built);
    }
    for stale in [&key_path, &manifest_path] {
        if stale.exists() {
            std::fs::remove_file(stale).with_context(|| format!("removing {}", stale.display()))?;
        }
    }
    let exported = kernel_names(tc, &own_bc)?;
    let entries: Vec<String> = exported.iter().filter(|n| !n.starts_with(METADATA_PREFIX)).cloned().collect();
    ensure!(
        !entries.is_empty(),
        "{} defines no kernels{}: expected `#[no_mangle] pub unsafe extern \"ptx-kernel\" fn`s",
        krate.display(),
        if job.kernels.is_empty() { String::new() } else { format!(" named {}", job.kernels.join(", ")) }
    );
    let entries_file = link_dir.join(format!("{name}.entries"));
    std::fs::write(&entries_file, exported.join("\n") + "\n")?;
    let linked_bc = link_dir.join(format!("{name}.linked.bc"));
    llvm(tc, "llvm-link", |c| {
        c.arg("--ignore-non-bitcode").arg(&own_bc).arg("--only-needed").args(sorted(&art.std)).arg("-o").arg(&linked_bc);
    })?;
    let opt_bc = link_dir.join(format!("{name}.opt.bc"));
    llvm(tc, "opt", |c| {
        c.arg(format!("--internalize-public-api-file={}", entries_file.display()))
            .arg("--passes=internalize,globaldce,default<O3>")
            .arg(&linked_bc)
            .arg("-o")
            .arg(&opt_bc);
    })?;
    // llc writes a temporary file; it replaces the PTX only after ptxas accepts it, by a
    // rename, so a process loading kernels never reads a half-written or rejected PTX.
    let ptx_tmp = out_dir.join(format!("{name}.ptx.tmp"));
    llvm(tc, "llc", |c| {
        c.arg(format!("-mcpu={arch}")).arg(&opt_bc).arg("-o").arg(&ptx_tmp);
    })?;
    let t_link = t.elapsed();

    let ptx = std::fs::read_to_string(&ptx_tmp)?;
    let metadata = parse_metadata(&ptx);
    // Entries whose config limits their registers (`maxnreg`) get `.maxnreg` for ptxas.
    let limits: Vec<(String, u32)> = metadata
        .iter()
        .filter_map(|(entry, v)| Some((entry.clone(), u32::try_from(v.get("maxnreg")?.as_u64()?).ok()?)))
        .collect();
    let ptx = if limits.is_empty() {
        ptx
    } else {
        let limited = crate::maxnreg::limit_registers(&ptx, &limits);
        std::fs::write(&ptx_tmp, &limited).with_context(|| format!("writing {}", ptx_tmp.display()))?;
        limited
    };
    let ptx_entries = parse_entries(&ptx);
    for e in &entries {
        ensure!(ptx_entries.iter().any(|p| &p.name == e), "kernel `{e}` is missing from {}", ptx_path.display());
    }

    let t = Instant::now();
    let cubin_tmp = out_dir.join(format!("{name}.cubin.tmp"));
    let report = ptxas.check(&ptx_tmp, arch, &cubin_tmp)?;
    let cubin = std::fs::read(&cubin_tmp).with_context(|| format!("reading {}", cubin_tmp.display()))?;
    std::fs::rename(&cubin_tmp, &cubin_path).with_context(|| format!("renaming {} into place", cubin_tmp.display()))?;
    std::fs::rename(&ptx_tmp, &ptx_path).with_context(|| format!("renaming {} into place", ptx_tmp.display()))?;
    let t_ptxas = t.elapsed();

    let mut rows = Vec::new();
    for e in &ptx_entries {
        let r = report
            .functions
            .iter()
            .find(|f| f.name == e.name)
            .with_context(|| format!("ptxas -v reported nothing for entry `{}`", e.name))?;
        rows.push((e, r));
    }
    print_table(&ptx_path, arch, &rows);
    eprintln!("build-ptx: {name} ({arch}): {}", entries_per_kernel(&metadata));
    for w in &report.warnings {
        eprintln!("build-ptx: {w}");
    }

    let spills: Vec<String> = report
        .functions
        .iter()
        .filter(|f| f.spill_store_bytes > 0 || f.spill_load_bytes > 0)
        .map(|f| format!("`{}` ({} B stored, {} B loaded)", f.name, f.spill_store_bytes, f.spill_load_bytes))
        .collect();
    // A serialized `wgmma` pipeline runs at a fraction of the tensor cores' rate: a build error,
    // like a spill (a warning with `--lenient`).
    let losses: Vec<String> = report.perf_losses.iter().map(|(f, m)| format!("`{f}`: {m}")).collect();
    for (what, list, sep) in [("spills registers", &spills, ", "), ("reports performance losses", &losses, "; ")] {
        if list.is_empty() {
            continue;
        }
        let msg = format!("ptxas -arch={arch} {what} in {}: {}", ptx_path.display(), list.join(sep));
        if !lenient {
            bail!(msg);
        }
        eprintln!("build-ptx: warning: {msg}");
    }

    write_manifest(&manifest_path, (name, arch), (&ptx, &metadata), &cubin, tc, ptxas, &rows)?;
    write_atomic(&key_path, key.as_bytes())?;
    eprintln!(
        "build-ptx: {} ({} entries) in {:.1}s: cargo {:.1}s, link {:.2}s, ptxas {:.2}s",
        manifest_path.display(),
        rows.len(),
        (t_build + t_link + t_ptxas).as_secs_f64(),
        t_build.as_secs_f64(),
        t_link.as_secs_f64(),
        t_ptxas.as_secs_f64()
    );
    Ok(built)
}

/// What the steps after the device `cargo build` depend on: the crate's linked bitcode, the
/// standard library's rlibs, the tool versions, the architecture and `--lenient` (a lenient
/// build may have passed with spills that a strict one rejects).
fn build_key(own_bc: &Path, art: &Artifacts, tc: &Toolchain, ptxas: &Ptxas, arch: &str, lenient: bool) -> Result<String> {
    let mut key = format!("rustc: {}\nptxas: {} {}\narch: {arch}\nlenient: {lenient}\n", tc.version, ptxas.version, ptxas.path.display());
    let bytes = std::fs::read(own_bc).with_context(|| format!("reading {}", own_bc.display()))?;
    let _ = writeln!(key, "bitcode: {:016x}", kernel_formats::fnv1a64(&bytes));
    // `core` and `compiler_builtins` (40 MB) change only with the toolchain or the flags, and
    // then cargo rewrites them: their size and time stand for their contents.
    for rlib in sorted(&art.std) {
        let meta = std::fs::metadata(rlib).with_context(|| format!("reading {}", rlib.display()))?;
        let _ = writeln!(key, "{} {:?} {}", meta.len(), meta.modified().ok(), rlib.display());
    }
    Ok(key)
}

fn sorted(paths: &[PathBuf]) -> Vec<&PathBuf> {
    let mut v: Vec<&PathBuf> = paths.iter().collect();
    v.sort();
    v
}

/// Runs the device `cargo build` and collects the rlibs from its JSON messages. Its stderr
/// passes through (and is kept, to explain a failure: [`crate::check::diagnose`]).
fn cargo_build(tc: &Toolchain, krate: &Path, arch: &str, kernels: &[String], target_dir: &Path) -> Result<Artifacts> {
    let manifest = krate.join("Cargo.toml");
    let mut cmd = tc.cargo();
    cmd.args(["build", "--lib", "--release", "--target", TARGET, "-Zbuild-std=core"])
        .args(["--message-format=json-render-diagnostics", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        // Only applies to target units: build scripts and proc macros build for the host.
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags(arch, kernels).join("\x1f"))
        // A build script using `kernel_build::Builder` does nothing in the build it started.
        .env(crate::NESTED_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("running cargo (rustup run ...)")?;
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let echo = std::thread::spawn(move || {
        let mut kept = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            // A huge log keeps its start, and every line that names a failed crate.
            if kept.len() < 20_000 || line.contains("could not compile") || line.contains("can't find crate") {
                kept.push(line);
            }
        }
        kept
    });
    let manifest = manifest.canonicalize()?;
    let mut name = None;
    let (mut own, mut std) = (Vec::new(), Vec::new());
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let is_lib = msg["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "lib" || k == "rlib"));
        if !is_lib {
            continue;
        }
        let manifest_path = PathBuf::from(msg["manifest_path"].as_str().unwrap_or_default());
        if manifest_path == manifest {
            name = msg["target"]["name"].as_str().map(|s| s.replace('-', "_"));
        }
        let rlibs = msg["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
            .filter(|f| f.ends_with(".rlib"))
            .map(PathBuf::from);
        if tc.in_sysroot(&manifest_path) {
            std.extend(rlibs);
        } else {
            own.extend(rlibs);
        }
    }
    let status = child.wait()?;
    let stderr = echo.join().unwrap_or_default();
    if !status.success() {
        let why = crate::check::diagnose(&stderr, krate);
        bail!("device build of {} failed ({status}){}", krate.display(), why.map(|w| format!(":\n{w}")).unwrap_or_default());
    }
    let name = name.with_context(|| {
        format!("cargo built no library for {}: device crates must be libraries (rlib)", krate.display())
    })?;
    let dep_info = target_dir.join(TARGET).join("release").join(format!("lib{name}.d"));
    let dep_info = dep_info.is_file().then_some(dep_info);
    Ok(Artifacts { name, own, std, dep_info })
}

/// Runs an LLVM tool from the toolchain's `llvm-tools`.
fn llvm(tc: &Toolchain, tool: &str, args: impl FnOnce(&mut Command)) -> Result<()> {
    let mut cmd = Command::new(tc.llvm(tool));
    args(&mut cmd);
    let out = cmd.output().with_context(|| format!("running {tool}"))?;
    if !out.status.success() {
        bail!("{tool} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr).trim_end());
    }
    Ok(())
}

/// The device build's rustc flags: the architecture, the kernel filter's cfg (declared, so that
/// no build warns about it) and, when only some kernels are asked for, the filter (the bare
/// name, which turns it on) and their names.
fn rustflags(arch: &str, kernels: &[String]) -> Vec<String> {
    let only = kernel_formats::ONLY_CFG;
    let mut flags = vec![format!("-Ctarget-cpu={arch}"), format!("--check-cfg=cfg({only},values(any()))")];
    if !kernels.is_empty() {
        flags.push(format!("--cfg={only}"));
        flags.extend(kernels.iter().map(|k| format!("--cfg={only}=\"{k}\"")));
    }
    flags
}

/// Names of the `ptx_kernel` functions defined in a bitcode module, sorted.
fn kernel_names(tc: &Toolchain, bc: &Path) -> Result<Vec<String>> {
    let mut child = Command::new(tc.llvm("llvm-dis"))
        .arg(bc)
        .args(["-o", "-"])
        .stdout(Stdio::piped())
        .spawn()
        .context("running llvm-dis")?;
    let mut names = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("piped stdout")).lines() {
        let line = line?;
        if let Some(n) = kernel_in_define(&line) {
            names.push(n);
        } else if let Some(n) = metadata_global(&line) {
            names.push(n);
        }
    }
    ensure!(child.wait()?.success(), "llvm-dis {} failed", bc.display());
    names.sort();
    names.dedup();
    Ok(names)
}

/// Prefix of the exported globals in which `#[kernel]` describes each entry (JSON).
pub const METADATA_PREFIX: &str = "__KERNEL_META_";

/// `@__KERNEL_META_<entry> = ...` → the global's name.
fn metadata_global(line: &str) -> Option<String> {
    let rest = line.strip_prefix('@')?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    name.starts_with(METADATA_PREFIX).then_some(name)
}

/// The instance descriptions in the PTX: `.global .align 1 .b8 __KERNEL_META_<entry>[N] = {..};`
/// → `(entry, JSON)`.
fn parse_metadata(ptx: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for line in ptx.lines() {
        let Some(pos) = line.find(METADATA_PREFIX) else { continue };
        let rest = &line[pos + METADATA_PREFIX.len()..];
        let Some(bracket) = rest.find('[') else { continue };
        let entry = rest[..bracket].to_string();
        let (Some(open), Some(close)) = (line.find('{'), line.rfind('}')) else { continue };
        let bytes: Vec<u8> = line[open + 1..close].split(',').filter_map(|b| b.trim().parse::<u8>().ok()).collect();
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            out.push((entry, v));
        }
    }
    out
}

/// `define ptx_kernel void @name(ptr ...` → `name` (LLVM 20+ spells kernels this way).
fn kernel_in_define(line: &str) -> Option<String> {
    let head = line.strip_prefix("define ")?;
    let at = head.find('@')?;
    if !head[..at].split_whitespace().any(|w| w == "ptx_kernel") {
        return None;
    }
    let rest = &head[at + 1..];
    let name = match rest.strip_prefix('"') {
        Some(q) => q.split('"').next()?,
        None => rest.split('(').next()?,
    };
    Some(name.to_string())
}

/// An `.entry` of a PTX module and its parameters, in order.
#[derive(Debug)]
struct PtxEntry {
    name: String,
    params: Vec<PtxParam>,
}

/// One `.param` of an entry: `.param .u64 .ptr .align 1 k_param_0` or
/// `.param .align 8 .b8 k_param_1[16]`.
#[derive(Debug, PartialEq)]
struct PtxParam {
    /// PTX type without the dot: `u64`, `f32`, `b8`, ...
    ty: String,
    /// Bytes, including the array length of aggregate parameters.
    size: u64,
    /// `.align N`, if given.
    align: Option<u64>,
    /// Declared with `.ptr` (a pointer argument; the runtime passes a device address).
    pointer: bool,
}

/// Parses every `.entry` declaration of a PTX module.
fn parse_entries(ptx: &str) -> Vec<PtxEntry> {
    let mut entries = Vec::new();
    let mut rest = ptx;
    while let Some((name, after)) = kernel_formats::ptx::next_entry(rest) {
        let Some(open) = after.find('(') else { break };
        let close = after[open..].find(')').map_or(after.len(), |c| open + c);
        let params = after[open + 1..close].split(',').filter_map(|p| parse_param(p.trim())).collect();
        entries.push(PtxEntry { name: name.to_string(), params });
        rest = &after[close..];
    }
    entries
}

fn parse_param(decl: &str) -> Option<PtxParam> {
    let mut words = decl.split_whitespace().peekable();
    if words.next()? != ".param" {
        return None;
    }
    let (mut ty, mut align, mut pointer, mut count) = (None, None, false, 1);
    while let Some(w) = words.next() {
        match w {
            ".align" => align = words.next().and_then(|n| n.parse().ok()),
            ".ptr" => pointer = true,
            ".global" | ".shared" | ".const" | ".local" => {}
            t if t.starts_with('.') => ty = Some(t[1..].to_string()),
            name => {
                // `name[16]`: an aggregate of 16 elements of `ty`.
                if let Some((_, n)) = name.split_once('[') {
                    count = n.trim_end_matches(']').parse().unwrap_or(1);
                }
            }
        }
    }
    let ty = ty?;
    let bits: u64 = match ty.as_str() {
        "pred" => 8,
        t => t[1..].parse().unwrap_or(0),
    };
    Some(PtxParam { size: bits / 8 * count, ty, align, pointer })
}

/// `matmul_kernel 90 entries (45 split), add_kernel 1 entry`: how many entries each kernel
/// expanded to (its instances, and the split-K versions among them), largest first.
fn entries_per_kernel(metadata: &[(String, Value)]) -> String {
    let mut kernels: Vec<(String, usize, usize)> = Vec::new();
    for (entry, meta) in metadata {
        let kernel = meta["kernel"].as_str().unwrap_or(entry).to_string();
        let split = usize::from(entry.ends_with("__split"));
        match kernels.iter_mut().find(|(k, _, _)| *k == kernel) {
            Some(row) => {
                row.1 += 1;
                row.2 += split;
            }
            None => kernels.push((kernel, 1, split)),
        }
    }
    kernels.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shown: Vec<String> = kernels
        .iter()
        .map(|(k, n, split)| {
            let plural = if *n == 1 { "entry" } else { "entries" };
            if *split > 0 {
                format!("{k} {n} {plural} ({split} split)")
            } else {
                format!("{k} {n} {plural}")
            }
        })
        .collect();
    shown.join(", ")
}

fn print_table(ptx: &Path, arch: &str, rows: &[(&PtxEntry, &FunctionReport)]) {
    let width = rows.iter().map(|(e, _)| e.name.len()).max().unwrap_or(0).max("entry".len());
    let mut s = String::new();
    let _ = writeln!(s, "{} ({arch}):", ptx.display());
    let _ = writeln!(
        s,
        "  {:width$}  {:>5}  {:>10}  {:>8}  {:>9}  {:>12}",
        "entry", "regs", "smem (B)", "barriers", "stack (B)", "spills st/ld"
    );
    for (e, r) in rows {
        let _ = writeln!(
            s,
            "  {:width$}  {:>5}  {:>10}  {:>8}  {:>9}  {:>12}",
            e.name,
            r.registers,
            r.shared_bytes,
            r.barriers,
            r.stack_frame_bytes,
            format!("{}/{}", r.spill_store_bytes, r.spill_load_bytes)
        );
    }
    print!("{s}");
}

/// Writes the manifest the runtime reads, `kernel_formats::manifest::Manifest` (the format is
/// documented there): the crate, architecture, both files' hashes, the tools' versions, and
/// per entry its parameters, `ptxas`'s report and the instance description `#[kernel]`
/// exported with it (`metadata`, as [`parse_metadata`] read it from `ptx`).
///
/// # Errors
/// An instance description that does not parse as `kernel_formats::manifest::Instance` (the
/// macro and the manifest disagree), or the file cannot be written.
fn write_manifest(
    path: &Path,
    (name, arch): (&str, &str),
    (ptx, metadata): (&str, &[(String, Value)]),
    cubin: &[u8],
    tc: &Toolchain,
    ptxas: &Ptxas,
    rows: &[(&PtxEntry, &FunctionReport)],
) -> Result<()> {
    use kernel_formats::manifest::{Entry, Instance, Manifest, Param};
    let mut manifest = Manifest::new(name, arch, ptx.as_bytes(), Some(cubin), &tc.version, &ptxas.version);
    for (e, r) in rows {
        let instance = match metadata.iter().find(|(n, _)| n == &e.name) {
            Some((_, v)) => Some(
                serde_json::from_value::<Instance>(v.clone())
                    .with_context(|| format!("the instance description of `{}` in the PTX: {v}", e.name))?,
            ),
            None => None,
        };
        manifest.entries.push(Entry {
            name: e.name.clone(),
            arch: arch.to_string(),
            params: e.params.iter().map(|p| Param { ty: p.ty.clone(), size: p.size, align: p.align, pointer: p.pointer }).collect(),
            registers: r.registers,
            shared_bytes: r.shared_bytes,
            barriers: r.barriers,
            stack_frame_bytes: r.stack_frame_bytes,
            spill_store_bytes: r.spill_store_bytes,
            spill_load_bytes: r.spill_load_bytes,
            instance,
        });
    }
    write_atomic(path, manifest.to_json().as_bytes())
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`, so readers
/// see either the old file or the new one, never a partial write.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_metadata_is_read_back_from_the_ptx() {
        let json = br#"{"entry": "k__c0", "threads_per_block": 128}"#;
        let bytes: Vec<String> = json.iter().map(|b| b.to_string()).collect();
        let ptx = format!(".visible .global .align 1 .b8 __KERNEL_META_k__c0[{}] = {{{}}};\n", json.len(), bytes.join(", "));
        let m = parse_metadata(&ptx);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, "k__c0");
        assert_eq!(m[0].1["threads_per_block"], 128);
        assert_eq!(metadata_global("@__KERNEL_META_k__c0 = constant [3 x i8] c\"abc\""), Some("__KERNEL_META_k__c0".into()));
        assert_eq!(metadata_global("@other = global i32 0"), None);
    }

    #[test]
    fn write_atomic_replaces_whole_files_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("xtask-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.manifest.json");
        std::fs::write(&path, "old, and longer than the new content").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "{left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_kernel_filter_is_a_declared_cfg() {
        assert_eq!(rustflags("sm_80", &[]), ["-Ctarget-cpu=sm_80", "--check-cfg=cfg(kernel_only,values(any()))"]);
        let some = rustflags("sm_90a", &["mm".to_string(), "softmax".to_string()]);
        assert_eq!(some[2..], ["--cfg=kernel_only", "--cfg=kernel_only=\"mm\"", "--cfg=kernel_only=\"softmax\""]);
    }

    #[test]
    fn entries_are_counted_per_kernel() {
        let meta = |entry: &str, kernel: &str| (entry.to_string(), serde_json::json!({ "entry": entry, "kernel": kernel }));
        let m = [meta("mm__c0", "mm"), meta("mm__c0__split", "mm"), meta("mm__c1", "mm"), meta("add__B_4", "add")];
        assert_eq!(entries_per_kernel(&m), "mm 3 entries (1 split), add 1 entry");
        assert_eq!(entries_per_kernel(&[]), "");
    }

    #[test]
    fn finds_kernels_in_llvm_ir() {
        let k = "define ptx_kernel void @smoke_vector_add(ptr noundef readonly %0, i32 %1) unnamed_addr #4 {";
        assert_eq!(kernel_in_define(k).as_deref(), Some("smoke_vector_add"));
        let q = "define dso_local ptx_kernel void @\"odd.name\"() {";
        assert_eq!(kernel_in_define(q).as_deref(), Some("odd.name"));
        let f = "define internal void @helper(ptr %0) {";
        assert_eq!(kernel_in_define(f), None);
        assert_eq!(kernel_in_define("declare ptx_kernel void @x()"), None);
    }

    #[test]
    fn parses_entry_params() {
        let ptx = "\
.visible .entry k(
\t.param .u64 .ptr .align 1 k_param_0,
\t.param .u32 k_param_1,
\t.param .align 8 .b8 k_param_2[24],
\t.param .f32 k_param_3
)
{
\tret;
}
.entry j()
{ ret; }
";
        let e = parse_entries(ptx);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].name, "k");
        let p = &e[0].params;
        assert_eq!(p[0], PtxParam { ty: "u64".into(), size: 8, align: Some(1), pointer: true });
        assert_eq!(p[1], PtxParam { ty: "u32".into(), size: 4, align: None, pointer: false });
        assert_eq!(p[2], PtxParam { ty: "b8".into(), size: 24, align: Some(8), pointer: false });
        assert_eq!(p[3].size, 4);
        assert_eq!(e[1].name, "j");
        assert!(e[1].params.is_empty());
    }

    #[test]
    fn the_manifest_is_what_the_runtime_reads() {
        use kernel_formats::manifest::Manifest;
        let meta = br#"{"entry": "k__c0", "kernel": "k", "meta": {"B": 64}, "functions": {"ACT": null}, "num_warps": 4, "num_stages": 2, "threads_per_block": 128, "dynamic_shared_bytes": 0}"#;
        let bytes: Vec<String> = meta.iter().map(|b| b.to_string()).collect();
        let ptx = format!(
            ".visible .global .align 1 .b8 __KERNEL_META_k__c0[{}] = {{{}}};\n.visible .entry k__c0(\n\t.param .u64 .ptr .align 1 k__c0_param_0\n)\n{{\n\tret;\n}}\n.entry other()\n{{ ret; }}\n",
            meta.len(),
            bytes.join(", ")
        );
        let entries = parse_entries(&ptx);
        let reports = [
            FunctionReport { name: "k__c0".into(), is_entry: true, registers: 12, shared_bytes: 16, ..Default::default() },
            FunctionReport { name: "other".into(), is_entry: true, ..Default::default() },
        ];
        let rows: Vec<(&PtxEntry, &FunctionReport)> = entries.iter().zip(&reports).collect();
        let tc = Toolchain { version: "rustc 1.97.0-nightly".into(), llvm_bin: PathBuf::new(), sysroot: PathBuf::new() };
        let ptxas = Ptxas { path: PathBuf::new(), version: "12.9, V12.9.86".into() };
        let dir = std::env::temp_dir().join(format!("xtask-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.manifest.json");
        write_manifest(&path, ("k", "sm_90a"), (&ptx, &parse_metadata(&ptx)), b"cubin", &tc, &ptxas, &rows).unwrap();
        let m = Manifest::read(&path).unwrap();
        assert!(m.ptx_matches(ptx.as_bytes()) && m.cubin_matches(b"cubin"));
        assert_eq!((m.crate_name.as_str(), m.arch.as_str(), m.ptx.as_str(), m.cubin.as_deref()), ("k", "sm_90a", "k.ptx", Some("k.cubin")));
        assert_eq!((m.rustc.as_str(), m.ptxas.as_str()), ("rustc 1.97.0-nightly", "12.9, V12.9.86"));
        assert_eq!(m.entries.len(), 2);
        let e = &m.entries[0];
        assert_eq!((e.name.as_str(), e.registers, e.shared_bytes, e.params.len()), ("k__c0", 12, 16, 1));
        assert!(e.params[0].pointer);
        let i = e.instance.as_ref().expect("the instance description");
        assert_eq!((i.meta["B"], i.functions["ACT"].clone(), i.threads_per_block), (64, None, 128));
        // An entry without a description (a hand-written kernel) has none.
        assert_eq!(m.entries[1].instance, None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
