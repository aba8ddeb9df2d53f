//! Offline PTX validation with NVIDIA's `ptxas`: no GPU needed.
//!
//! `ptxas -arch=<arch> -v` assembles every PTX file the build produces. It catches invalid PTX
//! (bad inline `asm!`, unresolved calls, instructions the architecture lacks), and its `-v`
//! report gives per-function registers, static shared memory, barriers and spills, which the
//! manifest records. Any error or any spill fails the build.
//!
//! Which `ptxas`: `$PTXAS` if set, else `ptxas` on `PATH`, else the one from the pip wheel
//! `nvidia-cuda-nvcc-cu12` ([`PTXAS_WHEEL`]) in a virtual environment (`.venv` of the
//! repository for `cargo xtask`, `<target>/kernel-build/.venv` for a build script), installed
//! there on first use (`python3 -m venv <venv> && <venv>/bin/pip install ...`).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pip requirement that provides `ptxas` when none is on `PATH`.
pub const PTXAS_WHEEL: &str = "nvidia-cuda-nvcc-cu12==12.9.86";

/// A located `ptxas`.
pub struct Ptxas {
    pub path: PathBuf,
    /// e.g. `12.9, V12.9.86`, from `ptxas --version`.
    pub version: String,
}

/// What `ptxas -v` says about one function.
#[derive(Clone, Debug, Default)]
pub struct FunctionReport {
    pub name: String,
    /// `.entry` (kernel) rather than `.func`.
    pub is_entry: bool,
    pub registers: u32,
    pub barriers: u32,
    /// Static shared memory in bytes.
    pub shared_bytes: u64,
    pub stack_frame_bytes: u64,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
}

/// The result of assembling one PTX file.
pub struct Report {
    pub functions: Vec<FunctionReport>,
    /// `ptxas` warning lines, passed on to the user.
    pub warnings: Vec<String>,
    /// "Potential Performance Loss" advisories (e.g. C7515: `wgmma` serialized) as (function,
    /// the advisory's text).
    pub perf_losses: Vec<(String, String)>,
}

impl Ptxas {
    /// Finds `ptxas` (see the module docs), installing the wheel into the virtual environment
    /// `venv` if needed.
    pub fn locate(venv: &Path) -> Result<Ptxas> {
        let path = match std::env::var_os("PTXAS") {
            Some(p) => PathBuf::from(p),
            None => match on_path("ptxas") {
                Some(p) => p,
                None => venv_ptxas(venv)?,
            },
        };
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .with_context(|| format!("running {} --version", path.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .lines()
            .find_map(|l| l.strip_prefix("Cuda compilation tools, release "))
            .unwrap_or("unknown")
            .to_string();
        Ok(Ptxas { path, version })
    }

    /// Assembles `ptx` for `arch`, writing the cubin to `cubin`. Fails on any `ptxas` error.
    pub fn check(&self, ptx: &Path, arch: &str, cubin: &Path) -> Result<Report> {
        let out = Command::new(&self.path)
            .arg(format!("-arch={arch}"))
            .arg("-v")
            // Functions are compiled on every core (the same cubin as with one thread).
            .args(["--split-compile", "0"])
            .arg(ptx)
            .arg("-o")
            .arg(cubin)
            .output()
            .with_context(|| format!("running {}", self.path.display()))?;
        // ptxas writes its `-v` report and its diagnostics to stderr (some versions to stdout).
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            bail!("ptxas -arch={arch} rejected {}:\n{}", ptx.display(), text.trim_end());
        }
        Ok(parse_report(&text))
    }
}

/// Parses the `ptxas -v` info lines:
///
/// ```text
/// ptxas info    : Compiling entry function 'smoke_block_sum' for 'sm_90a'
/// ptxas info    : Function properties for smoke_block_sum
///     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 12 registers, used 1 barriers, 1024 bytes smem
/// ```
fn parse_report(text: &str) -> Report {
    let mut functions: Vec<FunctionReport> = Vec::new();
    let mut warnings = Vec::new();
    let mut perf_losses = Vec::new();
    let mut current: Option<usize> = None;
    let slot = |functions: &mut Vec<FunctionReport>, name: &str| -> usize {
        match functions.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                functions.push(FunctionReport { name: name.to_string(), ..Default::default() });
                functions.len() - 1
            }
        }
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(at) = line.find("Potential Performance Loss") {
            let function = line.rsplit_once("in the function '").and_then(|(_, f)| f.split('\'').next()).unwrap_or_default();
            perf_losses.push((function.to_string(), line[at..].to_string()));
            continue;
        }
        if line.starts_with("ptxas warning") || line.contains("warning :") {
            warnings.push(line.to_string());
            continue;
        }
        let info = line.strip_prefix("ptxas info").map(|l| l.trim_start().trim_start_matches(':').trim());
        match info {
            Some(i) if i.starts_with("Compiling entry function '") => {
                let name = i["Compiling entry function '".len()..].split('\'').next().unwrap_or_default();
                let k = slot(&mut functions, name);
                functions[k].is_entry = true;
                current = Some(k);
            }
            Some(i) if i.starts_with("Function properties for ") => {
                current = Some(slot(&mut functions, i["Function properties for ".len()..].trim()));
            }
            Some(i) if i.starts_with("Used ") => {
                if let Some(k) = current {
                    let f = &mut functions[k];
                    for part in i.split(',') {
                        let (n, what) = number_then(part);
                        match what {
                            w if w.starts_with("registers") => f.registers = n as u32,
                            w if w.starts_with("barriers") => f.barriers = n as u32,
                            w if w.starts_with("bytes smem") => f.shared_bytes = n,
                            _ => {}
                        }
                    }
                }
            }
            Some(_) => {}
            None if line.contains("bytes stack frame") => {
                if let Some(k) = current {
                    let f = &mut functions[k];
                    for part in line.split(',') {
                        let (n, what) = number_then(part);
                        match what {
                            "bytes stack frame" => f.stack_frame_bytes = n,
                            "bytes spill stores" => f.spill_store_bytes = n,
                            "bytes spill loads" => f.spill_load_bytes = n,
                            _ => {}
                        }
                    }
                }
            }
            None => {}
        }
    }
    Report { functions, warnings, perf_losses }
}

/// `" used 12 registers"` → `(12, "registers")`; `"Used 3 barriers"` → `(3, "barriers")`.
fn number_then(part: &str) -> (u64, &str) {
    let part = part.trim();
    let part = part.strip_prefix("Used ").or_else(|| part.strip_prefix("used ")).unwrap_or(part);
    let (n, rest) = part.split_once(' ').unwrap_or((part, ""));
    (n.parse().unwrap_or(0), rest.trim())
}

fn on_path(exe: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(exe)).find(|p| p.is_file())
}

/// `ptxas` inside the wheel in `venv`, installing the venv and wheel when missing.
fn venv_ptxas(venv: &Path) -> Result<PathBuf> {
    let venv = venv.to_path_buf();
    if let Some(p) = find_in_venv(&venv) {
        return Ok(p);
    }
    let python = venv.join("bin/python");
    if !python.is_file() {
        eprintln!("build-ptx: no ptxas on PATH; creating {} for the {PTXAS_WHEEL} wheel", venv.display());
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv (set PTXAS=/path/to/ptxas to skip this)")?;
        if !status.success() {
            bail!("python3 -m venv {} failed ({status})", venv.display());
        }
    }
    eprintln!("build-ptx: installing {PTXAS_WHEEL} into {} (provides ptxas)", venv.display());
    let status =
        Command::new(&python).args(["-m", "pip", "install", "--quiet", PTXAS_WHEEL]).status().context("running pip")?;
    if !status.success() {
        bail!("pip install {PTXAS_WHEEL} failed ({status}); set PTXAS=/path/to/ptxas to use another one");
    }
    find_in_venv(&venv)
        .with_context(|| format!("{PTXAS_WHEEL} installed but no nvidia/cuda_nvcc/bin/ptxas under {}", venv.display()))
}

/// `<venv>/lib/python3.*/site-packages/nvidia/cuda_nvcc/bin/ptxas`.
fn find_in_venv(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten().map(|e| e.path().join("site-packages/nvidia/cuda_nvcc/bin/ptxas")).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let text = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90a'
ptxas info    : Function properties for k1
    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 7.366 ms
ptxas info    : Function properties for helper
    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'k1'
ptxas warning : Unresolved extern function 'f'
";
        let r = parse_report(text);
        assert_eq!(r.functions.len(), 2);
        let k = &r.functions[0];
        assert!(k.is_entry);
        assert_eq!((k.registers, k.barriers, k.shared_bytes), (255, 1, 1024));
        assert_eq!((k.spill_store_bytes, k.spill_load_bytes), (8, 4));
        let h = &r.functions[1];
        assert!(!h.is_entry);
        assert_eq!(h.stack_frame_bytes, 16);
        assert_eq!(r.warnings, ["ptxas warning : Unresolved extern function 'f'"]);
        assert_eq!(r.perf_losses.len(), 1);
        assert_eq!(r.perf_losses[0].0, "k1");
        assert!(r.perf_losses[0].1.starts_with("Potential Performance Loss: wgmma.mma_async instructions are serialized due to"));
    }
}
