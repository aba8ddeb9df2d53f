//! Finding, loading and caching the PTX of a kernel's crate.
//!
//! Where the PTX comes from, in order (the first one found wins):
//!
//! 1. when [`Settings::ptx_dir`](crate::Settings::ptx_dir) is set (`KERNEL_PTX_DIR`):
//!    `<dir>/<crate>.ptx`, then `<dir>/<arch>/<crate>.ptx` for each architecture; then the
//!    PTX embedded in the binary, if any, and nothing else;
//! 2. otherwise the PTX embedded in the binary ([`ModuleInfo::embedded`]: the crate's build
//!    script ran `kernel_build::Builder` and its root `kernel_std::embed_ptx!()`), for the
//!    best architecture it holds;
//! 3. otherwise `target/ptx/<arch>/<crate>.ptx` under the current directory and
//!    each of its ancestors, then under the defining crate's `CARGO_MANIFEST_DIR`
//!    (as it was at build time) and each of its ancestors. In each directory the
//!    architectures are tried best first, so the nearest build tree wins.
//!
//! The module loaded is the machine code `ptxas` assembled from the PTX (`<crate>.cubin`
//! beside the file, or embedded with it) when the manifest's hashes match both and the GPU
//! runs it, else the PTX itself, which the driver compiles on first load
//! ([`Settings::jit_ptx`](crate::Settings::jit_ptx), `KERNEL_JIT_PTX=1`, forces that). The
//! manifest's format is `kernel_formats::manifest`.
//!
//! Architectures by compute capability: 9.0 → `sm_90a`, then `sm_90`; 8.x →
//! `sm_80`; 10.0 and newer → `sm_<major><minor>`, then `sm_90` and `sm_80` (PTX
//! without the `a` suffix is compiled for newer GPUs by the driver).

use std::collections::HashSet;
use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use cudarc::driver::sys::{self, CUfunction_attribute as FnAttr, CUjit_option};
use cudarc::driver::{result, CudaContext};

use kernel_formats::manifest::{Manifest, ManifestError};

use super::{error_parts, guarded, panic_text, CudaDevice};
use crate::error::{DeviceError, LaunchError};
use crate::abi::{EmbeddedModule, InstanceInfo, KernelInfo, ModuleInfo};

/// Shared memory a block may use without opting in.
pub(crate) const DEFAULT_SHARED_LIMIT: u64 = 48 * 1024;

/// The PTX architectures to try for compute capability `cc`, best first.
///
/// Empty for GPUs older than compute capability 8.0.
pub(crate) fn arch_candidates(cc: (u32, u32)) -> Vec<String> {
    match cc {
        (9, 0) => vec!["sm_90a".into(), "sm_90".into()],
        (8, _) => vec!["sm_80".into()],
        (major, minor) if major >= 10 => vec![format!("sm_{major}{minor}"), "sm_90".into(), "sm_80".into()],
        (9, minor) => vec![format!("sm_9{minor}"), "sm_90".into(), "sm_80".into()],
        _ => Vec::new(),
    }
}

/// Every path to look at for `<crate_name>.ptx`, in order (see the module docs).
pub(crate) fn candidate_paths(
    crate_name: &str,
    archs: &[String],
    env_dir: Option<&Path>,
    cwd: Option<&Path>,
    manifest_dir: &Path,
) -> Vec<PathBuf> {
    let file = format!("{crate_name}.ptx");
    if let Some(dir) = env_dir {
        let mut paths = vec![dir.join(&file)];
        paths.extend(archs.iter().map(|a| dir.join(a).join(&file)));
        return paths;
    }
    let mut seen = HashSet::new();
    let mut paths = Vec::new();
    for start in cwd.into_iter().chain([manifest_dir]) {
        for dir in start.ancestors() {
            for arch in archs {
                let p = dir.join("target").join("ptx").join(arch).join(&file);
                if seen.insert(p.clone()) {
                    paths.push(p);
                }
            }
        }
    }
    paths
}

/// Where the PTX of a kernel's crate comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PtxSource {
    /// A file on disk, with `<crate>.manifest.json` and `<crate>.cubin` beside it.
    File(PathBuf),
    /// Built into the binary.
    Embedded(&'static EmbeddedModule),
}

impl PtxSource {
    /// The module cache's key, and the path errors name: the file, or `embedded:<the PTX's
    /// path at build time>`.
    pub(crate) fn key(&self) -> PathBuf {
        match self {
            PtxSource::File(p) => p.clone(),
            PtxSource::Embedded(m) => embedded_key(m),
        }
    }
}

fn embedded_key(m: &EmbeddedModule) -> PathBuf {
    PathBuf::from(format!("embedded:{}", m.path))
}

/// The embedded module of the best architecture in `archs`, if any.
pub(crate) fn embedded_for(embedded: &'static [EmbeddedModule], archs: &[String]) -> Option<&'static EmbeddedModule> {
    archs.iter().find_map(|a| embedded.iter().find(|m| m.arch == a.as_str()))
}

/// Chooses the PTX of `module` for `archs` (see the module docs), `is_file` telling which
/// paths exist; `Err` lists everything looked at: the paths, and `embedded:<path>` for each
/// embedded module of another architecture.
pub(crate) fn choose_source(
    module: &ModuleInfo,
    archs: &[String],
    env_dir: Option<&Path>,
    cwd: Option<&Path>,
    is_file: impl Fn(&Path) -> bool,
) -> Result<PtxSource, Vec<PathBuf>> {
    let embedded = embedded_for(module.embedded, archs).map(PtxSource::Embedded);
    let searched = candidate_paths(module.crate_name, archs, env_dir, cwd, Path::new(module.manifest_dir));
    let on_disk = || searched.iter().find(|p| is_file(p)).cloned().map(PtxSource::File);
    let found = if env_dir.is_some() { on_disk().or(embedded) } else { embedded.or_else(on_disk) };
    found.ok_or_else(|| searched.iter().cloned().chain(module.embedded.iter().map(embedded_key)).collect())
}

/// The PTX of `info`'s crate for `dev`, or [`LaunchError::PtxNotFound`].
pub(crate) fn find_ptx(dev: &CudaDevice, info: &KernelInfo) -> Result<PtxSource, LaunchError> {
    let archs = arch_candidates(dev.cc);
    if archs.is_empty() {
        return Err(LaunchError::Device(DeviceError::CudaUnavailable {
            ordinal: dev.ordinal,
            reason: format!(
                "compute capability {}.{} is not supported (kernels are compiled for sm_80 and newer)",
                dev.cc.0, dev.cc.1
            ),
        }));
    }
    let env_dir = crate::Settings::current().ptx_dir.clone();
    let cwd = std::env::current_dir().ok();
    choose_source(&info.module, &archs, env_dir.as_deref(), cwd.as_deref(), Path::is_file).map_err(|searched| {
        LaunchError::PtxNotFound { kernel: info.name, crate_name: info.module.crate_name, archs: archs.join(", "), searched }
    })
}

/// A loaded PTX module; unloaded when the last function using it is dropped.
#[derive(Debug)]
pub(crate) struct LoadedModule {
    module: sys::CUmodule,
    /// FNV-1a hash of the PTX text it was loaded from (keys the autotuning cache).
    pub(crate) hash: u64,
    /// The entries its PTX defines: a lookup of another one (a config built for another
    /// architecture only) is `MissingEntry` without asking the driver, whose
    /// `CUDA_ERROR_NOT_FOUND` tools such as compute-sanitizer report as an error.
    entries: HashSet<String>,
    ctx: Arc<CudaContext>,
}

// SAFETY: a CUmodule handle may be used from any thread once its context is
// bound; every use binds the context first.
unsafe impl Send for LoadedModule {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for LoadedModule {}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        let (ctx, module) = (&self.ctx, self.module);
        // SAFETY: the module was loaded by `load_module` and is unloaded once.
        let _ = guarded("cuda", "cuModuleUnload", || {
            ctx.bind_to_thread()?;
            unsafe { result::module::unload(module) }
        });
    }
}

/// A resolved entry point, keeping its module loaded.
#[derive(Debug)]
pub(crate) struct LoadedFunction {
    pub(crate) function: sys::CUfunction,
    /// Largest block the entry can be launched with (its register use included).
    pub(crate) max_threads: u32,
    /// Blocks of the instance that fit on one SM at once (0 when the driver could not say).
    pub(crate) blocks_per_sm: u32,
    /// Keeps the module loaded while the function is in use.
    _module: Arc<LoadedModule>,
}

// SAFETY: as for `LoadedModule`.
unsafe impl Send for LoadedFunction {}
// SAFETY: as for `LoadedModule`.
unsafe impl Sync for LoadedFunction {}

/// A one-line warning when the manifest beside a PTX (`<crate>.manifest.json`, written by
/// `cargo xtask build-ptx`) records another PTX hash: the PTX or the manifest is stale or was
/// partly written. `None` when they agree or there is no manifest.
#[cfg(test)]
pub(crate) fn manifest_mismatch(ptx_path: &Path, ptx: &[u8]) -> Option<String> {
    let path = Manifest::path_for(ptx_path);
    mismatch_message(ptx_path, &path, &Manifest::read(&path), ptx)
}

/// [`manifest_mismatch`] for a manifest read from `manifest_path` (for messages) with `read`.
fn mismatch_message(ptx_path: &Path, manifest_path: &Path, read: &Result<Manifest, ManifestError>, ptx: &[u8]) -> Option<String> {
    match read {
        Ok(m) if m.ptx_matches(ptx) => None,
        Ok(m) => Some(format!(
            "{} does not match its manifest ({} records {}, the file hashes to {}): stale or partly written; rebuild with `cargo xtask build-ptx`",
            ptx_path.display(),
            manifest_path.display(),
            m.ptx_hash,
            kernel_formats::hash_text(ptx)
        )),
        Err(ManifestError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!("{} is unreadable or corrupt ({e}); rebuild with `cargo xtask build-ptx`", manifest_path.display())),
    }
}

/// The machine code `cargo xtask build-ptx` assembled from the PTX at `ptx_path`
/// (`<crate>.cubin` beside it), when the manifest's hashes match both files: loading it skips
/// the driver's JIT compilation of the PTX (seconds to a minute for large modules).
/// `jit_ptx` ([`Settings::jit_ptx`](crate::Settings::jit_ptx)) ignores it.
#[cfg(test)]
pub(crate) fn matching_cubin(ptx_path: &Path, ptx: &[u8], jit_ptx: bool) -> Option<Vec<u8>> {
    file_cubin(ptx_path, &Manifest::read(&Manifest::path_for(ptx_path)), ptx, jit_ptx)
}

/// [`matching_cubin`] with the manifest already read.
fn file_cubin(ptx_path: &Path, read: &Result<Manifest, ManifestError>, ptx: &[u8], jit_ptx: bool) -> Option<Vec<u8>> {
    let manifest = read.as_ref().ok().filter(|_| !jit_ptx)?;
    let cubin = std::fs::read(ptx_path.with_file_name(manifest.cubin.as_deref()?)).ok()?;
    (manifest.ptx_matches(ptx) && manifest.cubin_matches(&cubin)).then_some(cubin)
}

/// An embedded module's manifest, as [`Manifest::read`] would give it (`Io(NotFound)` when it
/// has none).
fn embedded_manifest(m: &EmbeddedModule) -> Result<Manifest, ManifestError> {
    if m.manifest.is_empty() {
        return Err(ManifestError::Io(std::io::ErrorKind::NotFound.into()));
    }
    Manifest::from_json(m.manifest)
}

/// [`manifest_mismatch`] for an embedded module.
#[cfg(test)]
pub(crate) fn embedded_mismatch(m: &EmbeddedModule) -> Option<String> {
    embedded_mismatch_with(m, &embedded_manifest(m))
}

fn embedded_mismatch_with(m: &EmbeddedModule, read: &Result<Manifest, ManifestError>) -> Option<String> {
    let path = embedded_key(m);
    mismatch_message(&path, &Manifest::path_for(&path), read, m.ptx)
}

/// [`matching_cubin`] for an embedded module: its cubin when its manifest's hashes match both.
#[cfg(test)]
pub(crate) fn embedded_cubin(m: &EmbeddedModule, jit_ptx: bool) -> Option<&'static [u8]> {
    embedded_cubin_with(m, &embedded_manifest(m), jit_ptx)
}

fn embedded_cubin_with(m: &EmbeddedModule, read: &Result<Manifest, ManifestError>, jit_ptx: bool) -> Option<&'static [u8]> {
    let manifest = read.as_ref().ok().filter(|_| !jit_ptx && !m.cubin.is_empty())?;
    (manifest.ptx_matches(m.ptx) && manifest.cubin_matches(m.cubin)).then_some(m.cubin)
}

/// What [`read_source`] gives.
struct SourceBytes {
    ptx: Vec<u8>,
    /// The manifest's warning ([`manifest_mismatch`]).
    warning: Option<String>,
    /// The matching cubin ([`matching_cubin`]).
    cubin: Option<Vec<u8>>,
}

/// The PTX bytes of `source`, with the warning its manifest gives and its matching cubin (the
/// manifest read and parsed once).
fn read_source(source: &PtxSource, jit_ptx: bool) -> std::io::Result<SourceBytes> {
    Ok(match source {
        PtxSource::File(path) => {
            let ptx = std::fs::read(path)?;
            let manifest_path = Manifest::path_for(path);
            let manifest = Manifest::read(&manifest_path);
            let warning = mismatch_message(path, &manifest_path, &manifest, &ptx);
            let cubin = file_cubin(path, &manifest, &ptx, jit_ptx);
            SourceBytes { ptx, warning, cubin }
        }
        PtxSource::Embedded(m) => {
            let manifest = embedded_manifest(m);
            SourceBytes {
                ptx: m.ptx.to_vec(),
                warning: embedded_mismatch_with(m, &manifest),
                cubin: embedded_cubin_with(m, &manifest, jit_ptx).map(<[u8]>::to_vec),
            }
        }
    })
}

/// Loads `source` into `dev`'s context: its matching cubin when there is one that this GPU
/// runs, else the PTX, with the JIT compiler's error log on failure.
/// The names of the entries (`.entry <name>(`) a PTX text defines.
fn entry_names(ptx: &[u8]) -> HashSet<String> {
    kernel_formats::ptx::entry_names(&String::from_utf8_lossy(ptx)).map(str::to_string).collect()
}

fn load_module(dev: &CudaDevice, kernel: &'static str, source: &PtxSource) -> Result<LoadedModule, LaunchError> {
    let load_error = |code: String, message: String| LaunchError::PtxLoad { kernel, path: source.key(), code, message };
    let SourceBytes { ptx: bytes, warning, cubin } =
        read_source(source, crate::Settings::current().jit_ptx).map_err(|e| load_error("io".into(), e.to_string()))?;
    if let Some(warning) = warning {
        log::warn!("{warning}");
    }
    let hash = kernel_formats::fnv1a64(&bytes);
    let entries = entry_names(&bytes);
    if let Some(cubin) = cubin {
        let loaded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            dev.ctx.bind_to_thread()?;
            let mut module = std::mem::MaybeUninit::<sys::CUmodule>::uninit();
            // SAFETY: `cubin` is a complete ELF image that outlives the call.
            unsafe {
                sys::cuModuleLoadData(module.as_mut_ptr(), cubin.as_ptr().cast()).result()?;
                Ok::<_, cudarc::driver::DriverError>(module.assume_init())
            }
        }));
        // Another architecture (or a driver that refuses it): the PTX below.
        if let Ok(Ok(module)) = loaded {
            return Ok(LoadedModule { module, hash, entries, ctx: Arc::clone(&dev.ctx) });
        }
    }
    let image = CString::new(bytes)
        .map_err(|_| load_error("io".into(), "the file contains a NUL byte: it is not PTX text".into()))?;
    let mut log = vec![0u8; 64 * 1024];
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dev.ctx.bind_to_thread()?;
        let mut options = [CUjit_option::CU_JIT_ERROR_LOG_BUFFER, CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
        let mut module = std::mem::MaybeUninit::<sys::CUmodule>::uninit();
        // SAFETY: `image` is a NUL-terminated string, the option arrays have two
        // entries and the log buffer outlives the call.
        unsafe {
            sys::cuModuleLoadDataEx(
                module.as_mut_ptr(),
                image.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
            .result()?;
            Ok(module.assume_init())
        }
    }));
    match outcome {
        Ok(Ok(module)) => Ok(LoadedModule { module, hash, entries, ctx: Arc::clone(&dev.ctx) }),
        Ok(Err(e)) => {
            let (code, mut message) = error_parts(e);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let jit_log = String::from_utf8_lossy(&log[..end]);
            if !jit_log.trim().is_empty() {
                message = format!("{message}\n{}", jit_log.trim_end());
            }
            Err(load_error(code, message))
        }
        Err(payload) => Err(LaunchError::Device(DeviceError::DriverPanic {
            op: "cuModuleLoadDataEx".into(),
            message: panic_text(&*payload),
        })),
    }
}

/// The cached module for `source`, loading it on first use.
fn module(dev: &CudaDevice, kernel: &'static str, source: &PtxSource) -> Result<Arc<LoadedModule>, LaunchError> {
    let mut modules = dev.modules.lock().unwrap_or_else(PoisonError::into_inner);
    let key = source.key();
    if let Some(m) = modules.get(&key) {
        return Ok(Arc::clone(m));
    }
    let m = Arc::new(load_module(dev, kernel, source)?);
    modules.insert(key, Arc::clone(&m));
    Ok(m)
}

/// A hash of the PTX `info`'s launches on `dev` use: of the loaded module when the file
/// was loaded already, else of the file's current contents.
///
/// # Errors
/// As [`find_ptx`], or [`LaunchError::PtxLoad`] when the file cannot be read.
pub(crate) fn code_hash(dev: &CudaDevice, info: &'static KernelInfo) -> Result<u64, LaunchError> {
    let source = find_ptx(dev, info)?;
    let path = source.key();
    if let Some(m) = dev.modules.lock().unwrap_or_else(PoisonError::into_inner).get(&path) {
        return Ok(m.hash);
    }
    let path = match source {
        PtxSource::Embedded(m) => return Ok(kernel_formats::fnv1a64(m.ptx)),
        PtxSource::File(path) => path,
    };
    let bytes = std::fs::read(&path).map_err(|e| LaunchError::PtxLoad {
        kernel: info.name,
        path: path.clone(),
        code: "io".into(),
        message: e.to_string(),
    })?;
    Ok(kernel_formats::fnv1a64(&bytes))
}

/// The entry point of instance `index` of `info` on `dev` (with `split`, its entry for split
/// launches, `<entry>__split`): found, loaded, checked and configured on first use, then cached.
pub(crate) fn function(
    dev: &CudaDevice,
    info: &'static KernelInfo,
    index: usize,
    inst: &InstanceInfo,
    split: bool,
) -> Result<Arc<LoadedFunction>, LaunchError> {
    let key = (std::ptr::from_ref(info) as usize, index, split);
    if let Some(f) = dev.functions.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(Arc::clone(f));
    }
    // Leaked once per loaded instance (the cache keeps the function for the process's life).
    let entry: &'static str = if split { Box::leak(format!("{}__split", inst.entry).into_boxed_str()) } else { inst.entry };
    let source = find_ptx(dev, info)?;
    let path = source.key();
    let module = module(dev, info.name, &source)?;
    let missing = || LaunchError::MissingEntry { kernel: info.name, entry, path: path.clone() };
    if !module.entries.contains(entry) {
        return Err(missing());
    }
    let name = CString::new(entry).map_err(|_| missing())?;
    let raw = module.module;
    let function = match dev.call(format!("cuModuleGetFunction({entry})"), || {
        // SAFETY: the module is loaded and stays loaded while `module` lives.
        unsafe { result::module::get_function(raw, name) }
    }) {
        Ok(f) => f,
        Err(DeviceError::Driver { code, .. }) if code == "CUDA_ERROR_NOT_FOUND" => return Err(missing()),
        Err(e) => return Err(e.into()),
    };
    let cuda_error = |op: String, e: DeviceError| match e {
        DeviceError::Driver { code, message, .. } => {
            LaunchError::Cuda { kernel: info.name, entry: inst.entry, op, code, message }
        }
        other => LaunchError::Device(other),
    };
    let attr = |a: FnAttr| -> Result<i32, LaunchError> {
        let op = format!("cuFuncGetAttribute({a:?})");
        // SAFETY: `function` belongs to the loaded module.
        dev.call(&op, || unsafe { result::function::get_function_attribute(function, a) })
            .map_err(|e| cuda_error(op.clone(), e))
    };
    let static_shared = u64::try_from(attr(FnAttr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?).unwrap_or(0);
    let max_threads = u32::try_from(attr(FnAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?).unwrap_or(0);
    let dynamic = u64::from(inst.shared_bytes);
    check_shared(info, inst, static_shared + dynamic, u64::from(dev.max_shared_optin))?;
    if static_shared + dynamic > DEFAULT_SHARED_LIMIT {
        let op = format!("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = {dynamic})");
        let value = i32::try_from(dynamic).unwrap_or(i32::MAX);
        // SAFETY: `function` belongs to the loaded module.
        dev.call(&op, || unsafe {
            result::function::set_function_attribute(
                function,
                FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
        })
        .map_err(|e| cuda_error(op.clone(), e))?;
    }
    if static_shared + dynamic > 0 {
        // The shared memory of every block that registers and threads allow per SM, the rest
        // to L1 (`carveout.rs`): left to itself the driver may pick a split that fits fewer
        // blocks (ncu showed a 168 KB configuration limiting 50 KB blocks to 3 per SM on an
        // H100), and the largest split leaves a kernel that rereads its data little L1.
        let regs = u32::try_from(attr(FnAttr::CU_FUNC_ATTRIBUTE_NUM_REGS)?).unwrap_or(255);
        let pct = super::carveout::carveout_percent(&dev.sm_limits, static_shared + dynamic, inst.threads, regs);
        let op = format!("cuFuncSetAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT = {pct})");
        let value = i32::try_from(pct).unwrap_or(100);
        // SAFETY: `function` belongs to the loaded module.
        dev.call(&op, || unsafe {
            result::function::set_function_attribute(function, FnAttr::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, value)
        })
        .map_err(|e| cuda_error(op.clone(), e))?;
    }
    // Only needed to split launches (a failure just means they are not split).
    let blocks_per_sm = if split && inst.threads <= max_threads {
        let threads = i32::try_from(inst.threads).unwrap_or(i32::MAX);
        // SAFETY: `function` belongs to the loaded module; its shared-memory attributes are set.
        dev.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", || unsafe {
            result::occupancy::max_active_block_per_multiprocessor(function, threads, inst.shared_bytes as usize)
        })
        .map_or(0, |n| u32::try_from(n).unwrap_or(0))
    } else {
        0
    };
    let f = Arc::new(LoadedFunction { function, max_threads, blocks_per_sm, _module: module });
    dev.functions.lock().unwrap_or_else(PoisonError::into_inner).insert(key, Arc::clone(&f));
    Ok(f)
}

/// [`LaunchError::SharedMemory`] when `requested` bytes exceed `available`.
pub(crate) fn check_shared(
    info: &KernelInfo,
    inst: &InstanceInfo,
    requested: u64,
    available: u64,
) -> Result<(), LaunchError> {
    if requested > available {
        return Err(LaunchError::SharedMemory { kernel: info.name, entry: inst.entry, requested, available });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module's entries are read from its PTX, so that a lookup of one it lacks is answered
    /// without the driver.
    #[test]
    fn entries_are_read_from_the_ptx() {
        let ptx = b".version 8.5\n.visible .entry attn__c2(\n\t.param .u64 attn__c2_param_0\n)\n{\n}\n.visible .entry add__c0()\n{\n}\n.func helper(\n)\n";
        let names = entry_names(ptx);
        assert_eq!(names, HashSet::from(["attn__c2".to_string(), "add__c0".to_string()]));
        assert!(!names.contains("helper") && !names.contains("attn__c0"));
        assert!(entry_names(b"").is_empty());
    }

    #[test]
    fn architectures_by_compute_capability() {
        assert_eq!(arch_candidates((9, 0)), ["sm_90a", "sm_90"]);
        assert_eq!(arch_candidates((8, 0)), ["sm_80"]);
        assert_eq!(arch_candidates((8, 9)), ["sm_80"]);
        assert_eq!(arch_candidates((10, 0)), ["sm_100", "sm_90", "sm_80"]);
        assert!(arch_candidates((7, 5)).is_empty());
    }

    #[test]
    fn search_order_env_then_cwd_then_manifest() {
        let archs = arch_candidates((9, 0));
        let env = candidate_paths("k", &archs, Some(Path::new("/ptx")), Some(Path::new("/a")), Path::new("/m"));
        assert_eq!(env, [PathBuf::from("/ptx/k.ptx"), "/ptx/sm_90a/k.ptx".into(), "/ptx/sm_90/k.ptx".into()]);
        let paths = candidate_paths("k", &archs, None, Some(Path::new("/w/a")), Path::new("/w/m"));
        let expected: Vec<PathBuf> = [
            "/w/a/target/ptx/sm_90a/k.ptx",
            "/w/a/target/ptx/sm_90/k.ptx",
            "/w/target/ptx/sm_90a/k.ptx",
            "/w/target/ptx/sm_90/k.ptx",
            "/target/ptx/sm_90a/k.ptx",
            "/target/ptx/sm_90/k.ptx",
            "/w/m/target/ptx/sm_90a/k.ptx",
            "/w/m/target/ptx/sm_90/k.ptx",
        ]
        .into_iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(paths, expected, "ancestors shared with the current directory are searched once");
    }

    fn leak_module(arch: &'static str, ptx: &'static [u8], cubin: &'static [u8], manifest: Option<Manifest>) -> EmbeddedModule {
        let manifest: &'static str = manifest.map_or("", |m| Box::leak(m.to_json().into_boxed_str()));
        EmbeddedModule { arch, path: Box::leak(format!("/out/ptx/{arch}/k.ptx").into_boxed_str()), ptx, cubin, manifest }
    }

    #[test]
    fn embedded_ptx_comes_before_the_search_path_and_after_ptx_dir() {
        let modules: &'static [EmbeddedModule] =
            Box::leak(Box::new([leak_module("sm_80", b"ptx80", b"", None), leak_module("sm_90a", b"ptx90a", b"", None)]));
        let embedded = ModuleInfo { crate_name: "k", manifest_dir: "/w/m", embedded: modules };
        let plain = ModuleInfo { embedded: &[], ..embedded };
        let hopper = arch_candidates((9, 0));
        let on_disk = |p: &Path| p == Path::new("/w/target/ptx/sm_90a/k.ptx") || p == Path::new("/ptx/k.ptx");
        let cwd = Some(Path::new("/w/a"));
        // Without KERNEL_PTX_DIR: the embedded module for the best architecture, even with a
        // build tree on the way up.
        assert_eq!(choose_source(&embedded, &hopper, None, cwd, on_disk), Ok(PtxSource::Embedded(&modules[1])));
        assert_eq!(choose_source(&embedded, &arch_candidates((8, 6)), None, cwd, on_disk), Ok(PtxSource::Embedded(&modules[0])));
        // A crate that embeds nothing: the search path, as before.
        assert_eq!(choose_source(&plain, &hopper, None, cwd, on_disk), Ok(PtxSource::File("/w/target/ptx/sm_90a/k.ptx".into())));
        // KERNEL_PTX_DIR holding the crate's PTX wins over the embedded one...
        assert_eq!(choose_source(&embedded, &hopper, Some(Path::new("/ptx")), cwd, on_disk), Ok(PtxSource::File("/ptx/k.ptx".into())));
        // ... and one that does not hold it falls back to the embedded PTX, not the search path.
        assert_eq!(choose_source(&embedded, &hopper, Some(Path::new("/other")), cwd, on_disk), Ok(PtxSource::Embedded(&modules[1])));
        // Only another architecture embedded, nothing on disk: the error lists it too.
        let only80 = ModuleInfo { embedded: &modules[..1], ..embedded };
        let searched = choose_source(&only80, &hopper, None, cwd, |_| false).unwrap_err();
        assert_eq!(searched.last(), Some(&PathBuf::from("embedded:/out/ptx/sm_80/k.ptx")));
        assert_eq!(searched.first(), Some(&PathBuf::from("/w/a/target/ptx/sm_90a/k.ptx")));
        assert_eq!(PtxSource::Embedded(&modules[1]).key(), PathBuf::from("embedded:/out/ptx/sm_90a/k.ptx"));
    }

    #[test]
    fn an_embedded_cubin_is_used_only_when_its_manifest_matches() {
        let (ptx, cubin): (&'static [u8], &'static [u8]) = (b".version 8.0\n.target sm_90a\n", b"\x7fELF machine code");
        let good = leak_module("sm_90a", ptx, cubin, Some(Manifest::new("k", "sm_90a", ptx, Some(cubin), "rustc", "ptxas")));
        assert_eq!(embedded_cubin(&good, false), Some(cubin));
        assert_eq!(embedded_cubin(&good, true), None, "Settings::jit_ptx ignores it");
        assert_eq!(embedded_mismatch(&good), None);
        let stale = leak_module("sm_90a", ptx, cubin, Some(Manifest::new("k", "sm_90a", b"older ptx", Some(cubin), "rustc", "ptxas")));
        assert_eq!(embedded_cubin(&stale, false), None);
        let w = embedded_mismatch(&stale).unwrap();
        assert!(w.starts_with("embedded:/out/ptx/sm_90a/k.ptx does not match its manifest"), "{w}");
        let other_cubin = leak_module("sm_90a", ptx, cubin, Some(Manifest::new("k", "sm_90a", ptx, Some(b"other"), "rustc", "ptxas")));
        assert_eq!(embedded_cubin(&other_cubin, false), None);
        // No manifest or no cubin: the PTX, without a warning.
        let bare = leak_module("sm_90a", ptx, cubin, None);
        assert_eq!((embedded_cubin(&bare, false), embedded_mismatch(&bare)), (None, None));
        let no_cubin = leak_module("sm_90a", ptx, b"", Some(Manifest::new("k", "sm_90a", ptx, None, "rustc", "ptxas")));
        assert_eq!(embedded_cubin(&no_cubin, false), None);
        let corrupt = EmbeddedModule { manifest: "{\"ptx_ha", ..good };
        assert!(embedded_mismatch(&corrupt).unwrap().contains("unreadable or corrupt"));
        assert_eq!(embedded_cubin(&corrupt, false), None);
    }

    #[test]
    fn missing_ptx_message_lists_paths_and_the_fix() {
        let e = LaunchError::PtxNotFound {
            kernel: "add_kernel",
            crate_name: "examples",
            archs: "sm_90a, sm_90".into(),
            searched: vec!["/w/target/ptx/sm_90a/examples.ptx".into(), "/w/target/ptx/sm_90/examples.ptx".into()],
        };
        assert_eq!(
            e.to_string(),
            "no PTX for kernel `add_kernel` (crate `examples`, sm_90a, sm_90): searched \
             /w/target/ptx/sm_90a/examples.ptx, /w/target/ptx/sm_90/examples.ptx; run `cargo xtask build-ptx` \
             (or point KERNEL_PTX_DIR at a directory holding `examples.ptx`)"
        );
    }

    #[test]
    fn manifest_mismatch_detects_stale_truncated_and_corrupt_files() {
        let dir = std::env::temp_dir().join(format!("kernel-ptx-manifest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx_path = dir.join("k.ptx");
        let ptx = b".version 8.0\n.target sm_90a\n";
        // No manifest: nothing to say.
        assert_eq!(manifest_mismatch(&ptx_path, ptx), None);
        let manifest = dir.join("k.manifest.json");
        std::fs::write(&manifest, Manifest::new("k", "sm_90a", ptx, None, "rustc", "ptxas").to_json()).unwrap();
        assert_eq!(manifest_mismatch(&ptx_path, ptx), None);
        // A truncated (or otherwise changed) PTX no longer matches.
        let w = manifest_mismatch(&ptx_path, &ptx[..10]).unwrap();
        assert!(w.contains("stale or partly written") && w.contains("cargo xtask build-ptx"), "{w}");
        assert_eq!(w.lines().count(), 1);
        // A corrupt manifest is reported, not fatal.
        std::fs::write(&manifest, "{\"ptx_ha").unwrap();
        let w = manifest_mismatch(&ptx_path, ptx).unwrap();
        assert!(w.contains("unreadable or corrupt"), "{w}");
        assert_eq!(w.lines().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cubin_is_used_only_when_both_hashes_match() {
        let dir = std::env::temp_dir().join(format!("kernel-ptx-cubin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ptx_path = dir.join("k.ptx");
        let (ptx, cubin) = (b".version 8.0\n.target sm_90a\n".as_slice(), b"\x7fELF machine code".as_slice());
        std::fs::write(dir.join("k.cubin"), cubin).unwrap();
        let write_manifest = |ptx: &[u8], cubin: Option<&[u8]>| {
            let m = Manifest::new("k", "sm_90a", ptx, cubin, "rustc", "ptxas");
            std::fs::write(dir.join("k.manifest.json"), m.to_json()).unwrap();
        };
        write_manifest(ptx, Some(cubin));
        assert_eq!(matching_cubin(&ptx_path, ptx, false).as_deref(), Some(cubin));
        // `Settings::jit_ptx` ignores it.
        assert_eq!(matching_cubin(&ptx_path, ptx, true), None);
        // A PTX rebuilt after the cubin, or a cubin that changed: the PTX is JIT-compiled.
        assert_eq!(matching_cubin(&ptx_path, b"other ptx", false), None);
        write_manifest(ptx, Some(b"old cubin"));
        assert_eq!(matching_cubin(&ptx_path, ptx, false), None);
        // No cubin file, or a manifest from before cubins were recorded.
        write_manifest(ptx, Some(cubin));
        std::fs::remove_file(dir.join("k.cubin")).unwrap();
        assert_eq!(matching_cubin(&ptx_path, ptx, false), None);
        std::fs::write(dir.join("k.cubin"), cubin).unwrap();
        write_manifest(ptx, None);
        assert_eq!(matching_cubin(&ptx_path, ptx, false), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shared_memory_check() {
        static INST: InstanceInfo = InstanceInfo {
            entry: "mm__c0",
            config: 0,
            variant: 0,
            launch_metas: &[],
            threads: 128,
            shared_bytes: 300_000,
            tma: &[],
            split_bytes: 0,
            hidden: &[],
            split_hidden: &[],
        };
        static INFO: KernelInfo = KernelInfo {
            name: "mm",
            params: &[],
            configs: &[],
            key: &[],
            instances: std::slice::from_ref(&INST),
            module: crate::abi::ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
        };
        assert!(check_shared(&INFO, &INST, 232_448, 232_448).is_ok());
        let e = check_shared(&INFO, &INST, 300_000, 232_448).unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel `mm` (entry `mm__c0`) needs 300000 bytes of shared memory per block, but this \
             device allows at most 232448: choose smaller blocks or fewer stages"
        );
    }
}
