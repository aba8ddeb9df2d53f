//! Autotuning (Triton's `@triton.autotune`): the first launch of an autotuned
//! kernel for a new key on a GPU times every config and keeps the fastest; the
//! choice is cached in memory for the process and on disk across processes.
//!
//! # What keys the cache
//!
//! A [`CacheKey`] holds everything that can change which config is fastest or
//! whether a config is still the same code: the kernel (and its crate), the
//! instance key (function meta-parameter values and launch-time meta values,
//! e.g. `(Some("leaky_relu"),)`, then the launch's specialization: which pointer
//! arguments are 16-byte aligned and which integer arguments are 1 or multiples
//! of 16, e.g. `aaa|ddd1d1d1`, so a transposed operand or an unaligned view is
//! tuned on its own; see `crate::launch::specialization`), the values of the `key = [...]` parameters,
//! the dtypes of the pointer arguments, the GPU (name and compute capability),
//! a hash of the kernel crate's PTX (as loaded, or the file's contents before
//! it is loaded) and this crate's version. A hit is used only when the stored
//! config index is in range and the stored config text equals the current
//! config's `Display`; otherwise it is a miss and the kernel is re-tuned.
//!
//! # On disk
//!
//! One JSON file per kernel, `<dir>/autotune/<crate>.<kernel>.json`, where `<dir>` is
//! [`Settings::cache_dir`](crate::Settings::cache_dir): `$KERNEL_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/kernel-rs`, else `$HOME/.cache/kernel-rs` (the format's types are
//! `kernel_formats::autotune`):
//!
//! ```json
//! {"format": "kernel-rs-autotune", "version": 1, "kernel": "matmul_kernel", "crate": "examples",
//!  "entries": {"<key text>": {"config": 2, "config_text": "BLOCK_SIZE_M=128, ...", "ms": 1.92,
//!                             "key": {...components...}, "skipped": [...]}}}
//! ```
//!
//! Writes re-read the file under a lock (`<file>.lock`), merge the new entry
//! and replace the file by renaming a fully written temporary file beside it,
//! so a reader never sees half a file. A file that cannot be parsed (garbage,
//! truncated JSON, another format version) is ignored with a one-line warning
//! (`log::warn!`) and rewritten by the next store; an entry whose body is malformed is a miss,
//! kept until that key is stored again; an unwritable directory is a warning too. Neither is
//! ever an error of the launch.
//!
//! # Measuring
//!
//! Each config runs once untimed (warm-up; a config whose launch fails — too
//! much shared memory, too many threads, any [`LaunchError`] — is skipped and
//! its reason recorded), then is timed with CUDA events on the device's
//! stream for a few repetitions (more for short kernels, within a budget of
//! about [`REP_BUDGET_MS`] per config), and its median is compared. A config
//! whose first timed run is several times slower than the best so far is not
//! timed further. The configs within [`RECHECK_FACTOR`] of the best (at most
//! [`RECHECK_MAX`]) are then timed a second time, and each keeps the faster of
//! its two medians, so that one disturbed measurement (a clock change, another
//! process on the GPU) does not decide. When every config fails, the first
//! config's error is returned.
//!
//! # Split launches as a tuning choice
//!
//! A config whose launch can split its programs' K loops over several blocks (an entry with
//! a split version, see [`crate::split_plan`]) is also timed with the wider plan of
//! [`crate::wide_plan`] (grids under one wave, last waves more than half full) when that plan
//! differs from the default one for this launch and the config's time is within
//! [`RECHECK_FACTOR`] of the best; the decision is a config and a
//! [`SplitChoice`], stored as `"split": "wide"` or `"auto"` (an entry without it is `auto`), and
//! the kernel's `launch` runs under that choice ([`crate::with_split`]). Whether splitting
//! pays at those sizes depends on the hand-over's cost against the shorter loops, which only
//! a measurement answers.
//!
//! Every decision (kernel, key, chosen config, its time, skipped configs with reasons) is
//! logged at level `debug`, or `info` with [`Settings::print_autotuning`](crate::Settings)
//! (`KERNEL_PRINT_AUTOTUNING=1`), target `kernel_runtime::autotune`. Tuning that takes more
//! than a second says so at level `info` when it passes the second and when it ends.

// Without the `cuda` feature kernels run on the CPU only, where nothing is tuned: the cache,
// the timing loop and the decision report are then unused (but still unit-tested).
#![cfg_attr(not(feature = "cuda"), allow(dead_code, unused_imports))]

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use kernel_formats::autotune::{CacheEntry, CacheFile, KeyComponents, Skipped, StoredEntry};

#[cfg(feature = "cuda")]
use crate::cuda::CudaDevice;
use crate::dtype::DTypeKind;
use crate::error::LaunchError;
use crate::abi::KernelInfo;
use crate::launch::PtrArg;
use crate::split::{self, SplitChoice};

/// Timed repetitions per config: at least this many...
const MIN_REPS: usize = 3;
/// ... and at most this many.
const MAX_REPS: usize = 25;
/// Target time spent on the timed repetitions of one config, in milliseconds.
pub(crate) const REP_BUDGET_MS: f64 = 40.0;
/// A config whose first timed run is this many times slower than the best median so far
/// is not timed further.
const PRUNE_FACTOR: f64 = 3.0;
/// Configs whose median is within this factor of the best one's are timed a second time...
pub(crate) const RECHECK_FACTOR: f64 = 1.3;
/// ... at most this many of them (the fastest).
pub(crate) const RECHECK_MAX: usize = 3;
/// Tuning that takes longer than this shows its progress on stderr.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// Everything that selects a cached autotuning decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CacheKey {
    /// The kernel's name.
    pub(crate) kernel: String,
    /// The crate that defines it.
    pub(crate) crate_name: String,
    /// Function meta-parameter and launch-time meta values, as the launcher formats them.
    pub(crate) instance: String,
    /// `(name, value)` of each `key = [...]` parameter.
    pub(crate) key: Vec<(String, i64)>,
    /// Dtypes of the pointer arguments, in order.
    pub(crate) dtypes: Vec<DTypeKind>,
    /// GPU name and compute capability, e.g. `NVIDIA H100 80GB HBM3 (sm_90)`.
    pub(crate) gpu: String,
    /// Hash of the kernel crate's PTX, 16 hex digits.
    pub(crate) code: String,
    /// `kernel-runtime <version>`.
    pub(crate) runtime: String,
}

impl CacheKey {
    /// The key of a launch of `info` with these arguments on GPU `gpu` (name and compute
    /// capability) whose PTX hashes to `code_hash`.
    pub(crate) fn new(
        info: &KernelInfo,
        instance_key: &str,
        key_values: &[i64],
        dtypes: &[DTypeKind],
        gpu: &str,
        code_hash: u64,
    ) -> Self {
        let key = info
            .key
            .iter()
            .map(|s| (*s).to_string())
            .chain((info.key.len()..key_values.len()).map(|i| format!("key{i}")))
            .zip(key_values.iter().copied())
            .collect();
        CacheKey {
            kernel: info.name.to_string(),
            crate_name: info.module.crate_name.to_string(),
            instance: instance_key.to_string(),
            key,
            dtypes: dtypes.to_vec(),
            gpu: gpu.to_string(),
            code: format!("{code_hash:016x}"),
            runtime: format!("kernel-runtime {}", env!("CARGO_PKG_VERSION")),
        }
    }

    /// `[M=4096, N=4096, K=4096]`: the key values, for messages.
    pub(crate) fn key_values(&self) -> String {
        let parts: Vec<String> = self.key.iter().map(|(n, v)| format!("{n}={v}")).collect();
        format!("[{}]", parts.join(", "))
    }

    /// The components (stored beside each entry, for people reading the file).
    fn components(&self) -> KeyComponents {
        KeyComponents {
            kernel: self.kernel.clone(),
            crate_name: self.crate_name.clone(),
            instance: self.instance.clone(),
            key: self.key.iter().cloned().collect(),
            dtypes: self.dtypes.iter().map(ToString::to_string).collect(),
            gpu: self.gpu.clone(),
            ptx_hash: self.code.clone(),
            runtime: self.runtime.clone(),
        }
    }
}

impl fmt::Display for CacheKey {
    /// The one-line text the cache is keyed by:
    /// `matmul_kernel (examples) | (None,) | M=1, N=2 | f16, f16 | GPU (sm_90) | ptx 0123.. | kernel-runtime 0.1.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key: Vec<String> = self.key.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let dtypes: Vec<String> = self.dtypes.iter().map(ToString::to_string).collect();
        write!(
            f,
            "{} ({}) | {} | {} | {} | {} | ptx {} | {}",
            self.kernel,
            self.crate_name,
            self.instance,
            key.join(", "),
            dtypes.join(", "),
            self.gpu,
            self.code,
            self.runtime
        )
    }
}

/// A decision read from or written to the cache.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    /// Index into the kernel's configs.
    pub(crate) config: usize,
    /// The config's `Display` when it was tuned.
    pub(crate) config_text: String,
    /// Median time of the chosen config, in milliseconds.
    pub(crate) ms: f64,
    /// The split plan its launches use.
    pub(crate) split: SplitChoice,
}

/// The stored config index when `entry` still describes `configs` (index in range, same text).
pub(crate) fn validate(entry: &Entry, configs: &[crate::Config]) -> Option<usize> {
    let config = configs.get(entry.config)?;
    (config.to_string() == entry.config_text).then_some(entry.config)
}

/// The autotuning cache files under one directory.
#[derive(Clone, Debug)]
pub(crate) struct DiskCache {
    /// `<cache dir>/autotune`.
    dir: PathBuf,
}

/// Why a cache file was not usable.
#[derive(Debug)]
enum FileProblem {
    /// There is no file (not worth a warning).
    Missing,
    /// It exists but is unreadable, corrupt or of another version.
    Bad(String),
}

/// Distinguishes the temporary files of one process's writes.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl DiskCache {
    /// The cache under `cache_dir` (files go to `cache_dir/autotune`).
    pub(crate) fn new(cache_dir: &Path) -> Self {
        DiskCache { dir: cache_dir.join("autotune") }
    }

    /// The file of one kernel: `<dir>/<crate>.<kernel>.json`.
    pub(crate) fn path(&self, crate_name: &str, kernel: &str) -> PathBuf {
        let clean = |s: &str| -> String {
            s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
        };
        self.dir.join(format!("{}.{}.json", clean(crate_name), clean(kernel)))
    }

    /// The file at `path`, or why it is not usable.
    fn read_file(path: &Path) -> Result<CacheFile, FileProblem> {
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                return Err(FileProblem::Missing)
            }
            Err(e) => return Err(FileProblem::Bad(format!("cannot read it: {e}"))),
        };
        CacheFile::from_json(&text).map_err(|e| FileProblem::Bad(e.to_string()))
    }

    /// The stored entry for `key`, if any. A corrupt or stale file is reported through
    /// `warn` (one line) and reads as empty; a malformed entry is a miss.
    pub(crate) fn lookup(&self, key: &CacheKey, warn: &mut dyn FnMut(String)) -> Option<Entry> {
        let path = self.path(&key.crate_name, &key.kernel);
        let file = match Self::read_file(&path) {
            Ok(f) => f,
            Err(FileProblem::Missing) => return None,
            Err(FileProblem::Bad(why)) => {
                warn(format!("ignoring the autotuning cache {}: {why}; it will be rewritten", path.display()));
                return None;
            }
        };
        let e = file.entry(&key.to_string())?;
        Some(Entry {
            config: e.config,
            config_text: e.config_text.clone(),
            ms: e.ms.unwrap_or(f64::NAN),
            // Entries written before split choices existed are `auto`; a name this build does
            // not know is a miss (re-tuned).
            split: match &e.split {
                None => SplitChoice::Auto,
                Some(name) => SplitChoice::from_name(name)?,
            },
        })
    }

    /// Stores `entry` for `key` (with `skipped` configs and their reasons, for people reading
    /// the file): under an exclusive lock on `<file>.lock`, re-reads the file (a corrupt one
    /// is replaced, with a warning), merges the entry and atomically replaces the file.
    ///
    /// # Errors
    /// A description of what could not be written (the caller warns and goes on).
    pub(crate) fn store(
        &self,
        key: &CacheKey,
        entry: &Entry,
        skipped: &[(usize, String)],
        warn: &mut dyn FnMut(String),
    ) -> Result<PathBuf, String> {
        let path = self.path(&key.crate_name, &key.kernel);
        fs::create_dir_all(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let lock_path = path.with_extension("json.lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        // Without a working lock, concurrent writers may drop each other's entries, but
        // the rename still keeps every file whole.
        let locked = lock.lock().is_ok();
        let mut file = match Self::read_file(&path) {
            Ok(f) => f,
            Err(FileProblem::Missing) => CacheFile::new(&key.crate_name, &key.kernel),
            Err(FileProblem::Bad(why)) => {
                warn(format!("replacing the autotuning cache {}: {why}", path.display()));
                CacheFile::new(&key.crate_name, &key.kernel)
            }
        };
        let stored = CacheEntry {
            config: entry.config,
            config_text: entry.config_text.clone(),
            ms: entry.ms.is_finite().then_some(entry.ms),
            split: Some(entry.split.name().to_string()),
            key: Some(key.components()),
            skipped: skipped.iter().map(|(i, why)| Skipped { config: *i, reason: why.clone() }).collect(),
        };
        file.entries.insert(key.to_string(), StoredEntry::Valid(stored));
        let result = write_atomic(&path, file.to_json().as_bytes());
        if locked {
            let _ = lock.unlock();
        }
        result.map(|()| path)
    }
}

/// Writes `bytes` to a temporary file beside `path`, flushes it and renames it over `path`:
/// readers see the old file or the new one, never a mix.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("cache");
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp.{}.{n}", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// Times one run of a closure. The CUDA implementation records events around it on the
/// device's stream and waits for the end event; tests use a fake clock.
pub(crate) trait Timer {
    /// Runs `f` once and returns its duration in milliseconds, after it has finished
    /// (so that errors of asynchronous work surface here).
    ///
    /// # Errors
    /// The error of `f`, or of waiting for the device.
    fn time(&mut self, f: &mut dyn FnMut() -> Result<(), LaunchError>) -> Result<f64, LaunchError>;
}

/// [`Timer`] with CUDA events on a device's stream.
#[cfg(feature = "cuda")]
pub(crate) struct CudaTimer {
    pub(crate) dev: Arc<CudaDevice>,
}

#[cfg(feature = "cuda")]
impl Timer for CudaTimer {
    fn time(&mut self, f: &mut dyn FnMut() -> Result<(), LaunchError>) -> Result<f64, LaunchError> {
        let (start, end) = crate::cuda::timing_events(&self.dev)?;
        self.dev.call("cuEventRecord", || start.record(&self.dev.stream))?;
        f()?;
        self.dev.call("cuEventRecord", || end.record(&self.dev.stream))?;
        let ms = self.dev.call("cuEventElapsedTime", || start.elapsed_ms(&end))?;
        Ok(f64::from(ms))
    }
}

/// The outcome of timing every config. Indices are *candidates*: config `c` is candidate
/// `c`, and config `c` with [`SplitChoice::Wide`] candidate `configs + c`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tuned {
    /// The fastest candidate.
    pub(crate) best: usize,
    /// Its median time in milliseconds.
    pub(crate) best_ms: f64,
    /// Median (or, for pruned configs, single-run) time of each config that ran.
    pub(crate) times: Vec<Option<f64>>,
    /// Configs that failed, with the reason.
    pub(crate) skipped: Vec<(usize, String)>,
}

/// The median of `v` (not empty).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Times configs `0..n` with `run(config)`: one untimed warm-up (a failure skips the
/// config), one timed run to estimate, then up to [`MAX_REPS`] timed runs within
/// [`REP_BUDGET_MS`] (at least [`MIN_REPS`]); then the configs within [`RECHECK_FACTOR`] of
/// the best (at most [`RECHECK_MAX`]) are timed again the same way and keep the faster
/// median; the fastest median wins. `progress(done, n)` is called after each config of the
/// first pass.
///
/// # Errors
/// When every config fails: the first config's error.
#[cfg(test)]
pub(crate) fn select(
    n: usize,
    run: &mut dyn FnMut(usize) -> Result<(), LaunchError>,
    timer: &mut dyn Timer,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Tuned, LaunchError> {
    select_among(n, &|_, _, _| true, run, timer, progress)
}

/// Whether a candidate runs, given the times so far and the best median (see [`select_among`]).
pub(crate) type Applicable<'a> = dyn Fn(usize, &[Option<f64>], Option<f64>) -> bool + 'a;

/// [`select`] over the candidates `i` in `0..n` for which `applicable(i, times, best)` holds
/// when their turn comes (asked in order, after the earlier candidates ran; `times` are theirs,
/// `best` the best median so far); the others are neither run nor listed.
pub(crate) fn select_among(
    n: usize,
    applicable: &Applicable<'_>,
    run: &mut dyn FnMut(usize) -> Result<(), LaunchError>,
    timer: &mut dyn Timer,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Tuned, LaunchError> {
    let mut times: Vec<Option<f64>> = vec![None; n];
    let mut fully_timed = vec![false; n];
    let mut skipped = Vec::new();
    let mut first_error: Option<LaunchError> = None;
    let mut best: Option<(usize, f64)> = None;
    // The median of one config's repetitions, or its single estimate when it is pruned
    // (`false`) against `prune_at`.
    let mut measure = |config: usize, prune_at: Option<f64>| -> Result<(f64, bool), LaunchError> {
        let mut once = || run(config);
        timer.time(&mut once)?;
        let estimate = timer.time(&mut once)?;
        if prune_at.is_some_and(|b| estimate > PRUNE_FACTOR * b) {
            return Ok((estimate, false));
        }
        let reps = if estimate > 0.0 { (REP_BUDGET_MS / estimate) as usize } else { MAX_REPS };
        let reps = reps.clamp(MIN_REPS, MAX_REPS);
        let mut samples = vec![estimate];
        for _ in 1..reps {
            samples.push(timer.time(&mut once)?);
        }
        Ok((median(&mut samples), true))
    };
    for config in 0..n {
        if !applicable(config, &times, best.map(|(_, b)| b)) {
            progress(config + 1, n);
            continue;
        }
        match measure(config, best.map(|(_, b)| b)) {
            Ok((ms, full)) => {
                times[config] = Some(ms);
                fully_timed[config] = full;
                if best.is_none_or(|(_, b)| ms < b) {
                    best = Some((config, ms));
                }
            }
            Err(e) => {
                skipped.push((config, e.to_string()));
                if first_error.is_none() {
                    first_error = Some(e);
                }
            }
        }
        progress(config + 1, n);
    }
    if let Some((_, b)) = best {
        let mut close: Vec<(usize, f64)> =
            (0..n).filter(|&c| fully_timed[c]).filter_map(|c| times[c].map(|t| (c, t))).filter(|&(_, t)| t <= RECHECK_FACTOR * b).collect();
        close.sort_by(|x, y| x.1.total_cmp(&y.1));
        close.truncate(RECHECK_MAX);
        if close.len() > 1 {
            for (config, first) in close {
                // A config that ran before and fails now keeps its first time.
                if let Ok((again, _)) = measure(config, None) {
                    times[config] = Some(first.min(again));
                }
            }
            best = times.iter().enumerate().filter_map(|(c, t)| t.filter(|_| fully_timed[c]).map(|t| (c, t))).min_by(|x, y| x.1.total_cmp(&y.1));
        }
    }
    match (best, first_error) {
        (Some((best, best_ms)), _) => Ok(Tuned { best, best_ms, times, skipped }),
        (None, Some(e)) => Err(e),
        (None, None) => Err(LaunchError::NoInstance { kernel: "autotune", reason: "the kernel has no configs".into() }),
    }
}

/// The level decisions are logged at: `info` with [`Settings::print_autotuning`]
/// (`KERNEL_PRINT_AUTOTUNING=1`), else `debug`.
///
/// [`Settings::print_autotuning`]: crate::Settings::print_autotuning
fn decision_level() -> log::Level {
    if crate::Settings::current().print_autotuning {
        log::Level::Info
    } else {
        log::Level::Debug
    }
}

/// Warnings go to the `log` crate, one line each.
fn warn_log(msg: String) {
    log::warn!("{msg}");
}

/// The decision line logged for every decision ([`decision_level`]).
pub(crate) fn describe_decision(info: &KernelInfo, key: &CacheKey, tuned: &Tuned, source: &str) -> String {
    let n = info.configs.len();
    let (best, choice) = candidate(tuned.best, n);
    let config = info.configs.get(best).map(ToString::to_string).unwrap_or_default();
    let split = match choice {
        SplitChoice::Auto => "",
        SplitChoice::Wide => ", wide split",
    };
    let mut line = format!(
        "autotuning {} {} {}: config {best} ({config}){split}, {:.4} ms [{source}]",
        key.kernel,
        key.key_values(),
        key.instance,
        tuned.best_ms
    );
    let timed: Vec<String> = tuned
        .times
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.map(|t| format!("{}: {t:.4}", candidate_label(i, n))))
        .collect();
    if timed.len() > 1 {
        line.push_str(&format!("; times (ms; w: wide split) {}", timed.join(", ")));
    }
    for (i, why) in &tuned.skipped {
        line.push_str(&format!("; skipped config {}: {why}", candidate_label(*i, n)));
    }
    line
}

/// The config and split choice of candidate `i` among `n` configs (see [`Tuned`]).
pub(crate) fn candidate(i: usize, n: usize) -> (usize, SplitChoice) {
    if i < n {
        (i, SplitChoice::Auto)
    } else {
        (i - n, SplitChoice::Wide)
    }
}

/// The candidate of config `config` under `choice` among `n` configs (inverse of
/// [`candidate`]).
fn candidate_index(config: usize, choice: SplitChoice, n: usize) -> usize {
    match choice {
        SplitChoice::Auto => config,
        SplitChoice::Wide => n + config,
    }
}

/// Candidate `i` as the decision line shows it: `3`, or `3w` with the wide split.
fn candidate_label(i: usize, n: usize) -> String {
    match candidate(i, n) {
        (c, SplitChoice::Auto) => c.to_string(),
        (c, SplitChoice::Wide) => format!("{c}w"),
    }
}

/// The decision of an autotuned kernel's launch: the config, and the split plan its launch
/// runs under ([`crate::with_split`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    /// Index into the kernel's configs.
    pub config: usize,
    /// The split plan of its launches.
    pub split: SplitChoice,
}

/// Per-process decisions, by key text.
fn memory() -> &'static Mutex<HashMap<String, Entry>> {
    static MEMORY: OnceLock<Mutex<HashMap<String, Entry>>> = OnceLock::new();
    MEMORY.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Serializes tuning in the process: concurrent tuning on one GPU would distort the timings.
static TUNING: Mutex<()> = Mutex::new(());

/// Whether the unwritable-directory warning was printed (once per process).
static WARNED_UNWRITABLE: OnceLock<()> = OnceLock::new();

/// What a launch's decision depends on within one process: the kernel, the GPU, the instance
/// key, the key values and the pointer dtypes (the GPU's name and the PTX a process loaded do
/// not change while it runs).
type FastKey = (usize, usize, String, Vec<i64>, Vec<DTypeKind>);

/// Decisions already made in this process, by [`FastKey`]: a launch that finds its decision
/// here builds no [`CacheKey`], looks for no PTX file and hashes nothing (a launch's host
/// time at small sizes is mostly this bookkeeping).
fn fast_memory() -> &'static Mutex<HashMap<FastKey, Tuning>> {
    static FAST: OnceLock<Mutex<HashMap<FastKey, Tuning>>> = OnceLock::new();
    FAST.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The config for a launch of `info` (see the module docs). CPU arguments, kernels without
/// pointer arguments and kernels with a single config get config 0 without benchmarking.
pub(crate) fn autotune(
    info: &'static KernelInfo,
    args: &[PtrArg<'_>],
    key_values: &[i64],
    instance_key: &str,
    run: &mut dyn FnMut(usize) -> Result<(), LaunchError>,
) -> Result<Tuning, LaunchError> {
    if info.configs.len() <= 1 {
        return Ok(Tuning::default());
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (args, key_values, instance_key, run);
        Ok(Tuning::default())
    }
    #[cfg(feature = "cuda")]
    autotune_cuda(info, args, key_values, instance_key, run)
}

/// [`autotune`] for a kernel with several configs.
#[cfg(feature = "cuda")]
fn autotune_cuda(
    info: &'static KernelInfo,
    args: &[PtrArg<'_>],
    key_values: &[i64],
    instance_key: &str,
    run: &mut dyn FnMut(usize) -> Result<(), LaunchError>,
) -> Result<Tuning, LaunchError> {
    let Some(dev) = args.first().and_then(|a| a.device.cuda_device()) else {
        return Ok(Tuning::default());
    };
    let fast: FastKey = (
        std::ptr::from_ref(info) as usize,
        dev.ordinal,
        instance_key.to_string(),
        key_values.to_vec(),
        args.iter().map(|a| a.kind).collect(),
    );
    if let Some(t) = fast_memory().lock().unwrap_or_else(PoisonError::into_inner).get(&fast) {
        return Ok(*t);
    }
    // The arguments are copied on the device's stream: after the work of `with_stream`'s.
    crate::stream::wait_for_current(dev)?;
    let tuning = decide(info, dev, &fast.4, key_values, instance_key, run)?;
    fast_memory().lock().unwrap_or_else(PoisonError::into_inner).insert(fast, tuning);
    Ok(tuning)
}

/// [`autotune`]'s decision when this process has not made it yet: from the in-memory or
/// on-disk cache by [`CacheKey`], else by timing the candidates.
#[cfg(feature = "cuda")]
fn decide(
    info: &'static KernelInfo,
    dev: &Arc<CudaDevice>,
    dtypes: &[DTypeKind],
    key_values: &[i64],
    instance_key: &str,
    run: &mut dyn FnMut(usize) -> Result<(), LaunchError>,
) -> Result<Tuning, LaunchError> {
    let code_hash = crate::cuda::ptx::code_hash(dev, info)?;
    let gpu = format!("{} (sm_{}{})", dev.name, dev.cc.0, dev.cc.1);
    let key = CacheKey::new(info, instance_key, key_values, dtypes, &gpu, code_hash);
    let text = key.to_string();
    let from_memory = |text: &str| {
        let mem = memory().lock().unwrap_or_else(PoisonError::into_inner);
        mem.get(text).and_then(|e| validate(e, info.configs).map(|config| Tuning { config, split: e.split }))
    };
    if let Some(i) = from_memory(&text) {
        return Ok(i);
    }
    let _tuning = TUNING.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = from_memory(&text) {
        return Ok(i);
    }
    let disk = crate::Settings::current().cache_dir.as_deref().map(DiskCache::new);
    let mut warn = warn_log;
    let level = decision_level();
    if let Some(entry) = disk.as_ref().and_then(|d| d.lookup(&key, &mut warn)) {
        if let Some(i) = validate(&entry, info.configs) {
            let tuning = Tuning { config: i, split: entry.split };
            if log::log_enabled!(level) {
                let best = candidate_index(i, entry.split, info.configs.len());
                let tuned = Tuned { best, best_ms: entry.ms, times: Vec::new(), skipped: Vec::new() };
                log::log!(level, "{}", describe_decision(info, &key, &tuned, "disk cache"));
            }
            memory().lock().unwrap_or_else(PoisonError::into_inner).insert(text, entry);
            return Ok(tuning);
        }
    }
    let start = Instant::now();
    let mut shown = false;
    let label = format!("autotuning {} {}", key.kernel, key.key_values());
    // Long tuning says so when it passes PROGRESS_AFTER and when it ends (log lines: no
    // in-place counter).
    let mut progress = |done: usize, n: usize| {
        if !shown && done < n && start.elapsed() > PROGRESS_AFTER {
            shown = true;
            log::info!("{label}: {done}/{n} candidates timed after {:.1} s ...", start.elapsed().as_secs_f64());
        } else if shown && done == n {
            log::info!("{label}: {n}/{n} candidates timed ({:.1} s)", start.elapsed().as_secs_f64());
        }
    };
    let mut timer = CudaTimer { dev: Arc::clone(dev) };
    // Each config first under the default plan; then, for each config whose launch would have
    // planned otherwise under the wide one and whose time is within RECHECK_FACTOR of the best,
    // again with it.
    let n = info.configs.len();
    let wide_differs: Vec<std::cell::Cell<bool>> = (0..n).map(|_| std::cell::Cell::new(false)).collect();
    let mut run_candidate = |i: usize| -> Result<(), LaunchError> {
        let (config, choice) = candidate(i, n);
        match choice {
            SplitChoice::Auto => {
                let (r, differs) = split::probe_wide(|| split::with_split(choice, || run(config)));
                if differs {
                    wide_differs[config].set(true);
                }
                r
            }
            SplitChoice::Wide => split::with_split(choice, || run(config)),
        }
    };
    let applicable = |i: usize, times: &[Option<f64>], best: Option<f64>| {
        i < n || (wide_differs[i - n].get() && matches!((times[i - n], best), (Some(t), Some(b)) if t <= RECHECK_FACTOR * b))
    };
    let tuned = select_among(2 * n, &applicable, &mut run_candidate, &mut timer, &mut progress)?;
    let (best, choice) = candidate(tuned.best, n);
    let entry = Entry { config: best, config_text: info.configs[best].to_string(), ms: tuned.best_ms, split: choice };
    log::log!(level, "{}", describe_decision(info, &key, &tuned, "tuned"));
    if let Some(disk) = &disk {
        let skipped: Vec<(usize, String)> = tuned
            .skipped
            .iter()
            .map(|(i, why)| match candidate(*i, n) {
                (c, SplitChoice::Auto) => (c, why.clone()),
                (c, SplitChoice::Wide) => (c, format!("with the wide split: {why}")),
            })
            .collect();
        if let Err(why) = disk.store(&key, &entry, &skipped, &mut warn) {
            if WARNED_UNWRITABLE.set(()).is_ok() {
                warn_log(format!(
                    "cannot write the autotuning cache ({why}); decisions are kept for this process only \
                     (set Settings::cache_dir or KERNEL_CACHE_DIR to a writable directory)"
                ));
            }
        }
    } else if WARNED_UNWRITABLE.set(()).is_ok() {
        warn_log("no autotuning cache directory (set Settings::cache_dir, KERNEL_CACHE_DIR, XDG_CACHE_HOME or HOME); decisions are kept for this process only".into());
    }
    memory().lock().unwrap_or_else(PoisonError::into_inner).insert(text, entry);
    Ok(Tuning { config: best, split: choice })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ModuleInfo, ParamInfo, ParamKind};
    use crate::{Config, MetaValue};
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap as Sorted;
    use std::rc::Rc;

    use kernel_formats::autotune::{FORMAT, VERSION as FORMAT_VERSION};
    use serde_json::{json, Value};

    static CONFIGS: [Config; 3] = [
        Config::new(&[("BLOCK", MetaValue::Int(256))], 8, 3),
        Config::new(&[("BLOCK", MetaValue::Int(128))], 4, 4),
        Config::new(&[("BLOCK", MetaValue::Int(64))], 2, 5),
    ];

    static INFO: KernelInfo = KernelInfo {
        name: "mm",
        params: &[
            ParamInfo { name: "a", kind: ParamKind::Ptr(DTypeKind::F16) },
            ParamInfo { name: "M", kind: ParamKind::Scalar(DTypeKind::I32) },
            ParamInfo { name: "N", kind: ParamKind::Scalar(DTypeKind::I32) },
        ],
        configs: &CONFIGS,
        key: &["M", "N"],
        instances: &[],
        module: ModuleInfo { crate_name: "examples", manifest_dir: ".", embedded: &[] }, asserts: &[],
    };

    fn key(m: i64) -> CacheKey {
        CacheKey::new(&INFO, "(None,)", &[m, 64], &[DTypeKind::F16, DTypeKind::F32], "NVIDIA H100 80GB HBM3 (sm_90)", 0xabc)
    }

    /// A fresh directory under the system temp dir.
    fn temp_dir(name: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "kernel-rs-autotune-test-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn entry(config: usize) -> Entry {
        Entry { config, config_text: CONFIGS[config].to_string(), ms: 1.5, split: if config == 2 { SplitChoice::Wide } else { SplitChoice::Auto } }
    }

    #[test]
    fn key_names_every_component() {
        let k = key(4096);
        assert_eq!(
            k.to_string(),
            format!(
                "mm (examples) | (None,) | M=4096, N=64 | f16, f32 | NVIDIA H100 80GB HBM3 (sm_90) | ptx 0000000000000abc | kernel-runtime {}",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(k.key_values(), "[M=4096, N=64]");
        // Every component changes the key.
        let base = k.to_string();
        let variants = [
            CacheKey::new(&INFO, "(Some(\"leaky_relu\"),)", &[4096, 64], &k.dtypes, &k.gpu, 0xabc),
            CacheKey::new(&INFO, "(None,)", &[4096, 65], &k.dtypes, &k.gpu, 0xabc),
            CacheKey::new(&INFO, "(None,)", &[4096, 64], &[DTypeKind::BF16, DTypeKind::F32], &k.gpu, 0xabc),
            CacheKey::new(&INFO, "(None,)", &[4096, 64], &k.dtypes, "NVIDIA A100 (sm_80)", 0xabc),
            CacheKey::new(&INFO, "(None,)", &[4096, 64], &k.dtypes, &k.gpu, 0xabd),
        ];
        for v in variants {
            assert_ne!(v.to_string(), base);
        }
        let c = k.components();
        assert_eq!(c.key["M"], 4096);
        assert_eq!(c.dtypes, ["f16", "f32"]);
        assert_eq!(c.ptx_hash, "0000000000000abc");
        assert_eq!((c.kernel.as_str(), c.crate_name.as_str(), c.instance.as_str()), ("mm", "examples", "(None,)"));
    }

    #[test]
    fn round_trip_in_a_temp_dir() {
        let dir = temp_dir("roundtrip");
        let cache = DiskCache::new(&dir);
        let mut warnings = Vec::new();
        let mut warn = |w: String| warnings.push(w);
        assert_eq!(cache.lookup(&key(1), &mut warn), None);
        let path = cache.store(&key(1), &entry(2), &[(0, "too much shared memory".into())], &mut warn).unwrap();
        assert_eq!(path, dir.join("autotune").join("examples.mm.json"));
        cache.store(&key(2), &entry(1), &[], &mut warn).unwrap();
        assert_eq!(cache.lookup(&key(1), &mut warn), Some(entry(2)));
        assert_eq!(cache.lookup(&key(2), &mut warn), Some(entry(1)));
        assert_eq!(cache.lookup(&key(3), &mut warn), None);
        // Re-storing a key replaces its entry.
        cache.store(&key(1), &entry(0), &[], &mut warn).unwrap();
        assert_eq!(cache.lookup(&key(1), &mut warn), Some(entry(0)));
        assert!(warnings.is_empty(), "{warnings:?}");
        let file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(file["version"], FORMAT_VERSION);
        assert_eq!(file["entries"].as_object().unwrap().len(), 2);
        // The layout people read: the key's components and the skipped configs beside the choice.
        let e = &file["entries"][key(1).to_string()];
        assert_eq!(e["config"], 0);
        assert_eq!(e["key"]["key"]["M"], 1);
        assert_eq!(e["key"]["gpu"], "NVIDIA H100 80GB HBM3 (sm_90)");
        let e2 = &file["entries"][key(2).to_string()];
        assert_eq!(e2["config_text"], CONFIGS[1].to_string());
        assert_eq!(e2["ms"], 1.5);
        assert_eq!(validate(&entry(2), &CONFIGS), Some(2));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corrupt_files_are_ignored_with_a_warning_and_rewritten() {
        let valid_other_version = json!({"format": FORMAT, "version": 999, "kernel": "mm", "crate": "examples", "entries": {}});
        let cases: [(&str, String, &str); 5] = [
            ("garbage", "\u{0}\u{1}not json at all".into(), "not valid JSON"),
            ("truncated", "{\"format\": \"kernel-rs-autotune\", \"version\": 1, \"entries\": {\"k".into(), "not valid JSON"),
            ("version", valid_other_version.to_string(), "format version 999"),
            ("format", json!({"format": "other", "version": 1, "entries": {}}).to_string(), "`format`"),
            ("array", "[1, 2]".into(), "not a JSON object"),
        ];
        for (name, content, reason) in cases {
            let dir = temp_dir(name);
            let cache = DiskCache::new(&dir);
            let path = cache.path("examples", "mm");
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, content).unwrap();
            let mut warnings = Vec::new();
            assert_eq!(cache.lookup(&key(1), &mut |w| warnings.push(w)), None, "{name}");
            assert_eq!(warnings.len(), 1, "{name}: {warnings:?}");
            assert!(warnings[0].contains(reason) && warnings[0].contains("will be rewritten"), "{name}: {}", warnings[0]);
            assert!(!warnings[0].contains('\n'));
            // The next store replaces it (with one more warning), and it reads back.
            let mut store_warnings = Vec::new();
            cache.store(&key(1), &entry(1), &[], &mut |w| store_warnings.push(w)).unwrap();
            assert_eq!(store_warnings.len(), 1, "{name}");
            let mut after = Vec::new();
            assert_eq!(cache.lookup(&key(1), &mut |w| after.push(w)), Some(entry(1)), "{name}");
            assert!(after.is_empty());
            fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn stale_entries_are_misses() {
        // The config at the stored index changed (its text differs), or the index is gone.
        let changed = Entry { config: 1, config_text: "BLOCK=999, num_warps=4, num_stages=4".into(), ms: 1.0, split: SplitChoice::Auto };
        assert_eq!(validate(&changed, &CONFIGS), None);
        let gone = Entry { config: 7, config_text: CONFIGS[0].to_string(), ms: 1.0, split: SplitChoice::Auto };
        assert_eq!(validate(&gone, &CONFIGS), None);
        assert_eq!(validate(&entry(1), &CONFIGS), Some(1));
        // A stale entry in a file reads back as it was stored, and validation rejects it.
        let dir = temp_dir("stale");
        let cache = DiskCache::new(&dir);
        cache.store(&key(5), &changed, &[], &mut |w| panic!("{w}")).unwrap();
        let read = cache.lookup(&key(5), &mut |w| panic!("{w}")).unwrap();
        assert_eq!(validate(&read, &CONFIGS), None);
        // An entry with a malformed body is a miss, not an error.
        let path = cache.path("examples", "mm");
        let mut file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        file["entries"][key(5).to_string()]["config"] = json!("three");
        fs::write(&path, file.to_string()).unwrap();
        assert_eq!(cache.lookup(&key(5), &mut |w| panic!("{w}")), None);
        // It stays in the file while other keys are stored, and storing its key replaces it.
        cache.store(&key(7), &entry(0), &[], &mut |w| panic!("{w}")).unwrap();
        let file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(file["entries"][key(5).to_string()]["config"], "three");
        cache.store(&key(5), &entry(1), &[], &mut |w| panic!("{w}")).unwrap();
        assert_eq!(cache.lookup(&key(5), &mut |w| panic!("{w}")), Some(entry(1)));
        // Entries written before split choices existed are `auto`; an unknown choice is a miss.
        cache.store(&key(6), &entry(2), &[], &mut |w| panic!("{w}")).unwrap();
        let mut file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(file["entries"][key(6).to_string()]["split"], "wide");
        file["entries"][key(6).to_string()].as_object_mut().unwrap().remove("split");
        fs::write(&path, file.to_string()).unwrap();
        assert_eq!(cache.lookup(&key(6), &mut |w| panic!("{w}")).map(|e| e.split), Some(SplitChoice::Auto));
        file["entries"][key(6).to_string()]["split"] = json!("diagonal");
        fs::write(&path, file.to_string()).unwrap();
        assert_eq!(cache.lookup(&key(6), &mut |w| panic!("{w}")), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn wide_split_candidates_run_only_where_they_apply_and_can_win() {
        // Three configs; candidates 3..6 are the same configs with the wide split. Config 1's
        // launch would split otherwise under the wide plan (and is faster so), config 0's would
        // not, config 2's would but it is too slow to matter: candidates 3 and 5 never run.
        let current = Rc::new(Cell::new(usize::MAX));
        let mut timer = FakeTimer { current: Rc::clone(&current), ms: vec![2.0, 2.5, 4.0, 0.5, 1.0, 0.5], calls: Sorted::new() };
        let ran = RefCell::new(Vec::new());
        // Config 2's plan differs too, but it is more than RECHECK_FACTOR slower than the best.
        let differs = [false, true, true];
        let mut run = |i: usize| {
            current.set(i);
            ran.borrow_mut().push(i);
            Ok(())
        };
        let applicable = |i: usize, times: &[Option<f64>], best: Option<f64>| {
            // As `autotune` asks: the config's plan differs, and it is close to the best.
            i < 3 || (differs[i - 3] && times[i - 3].zip(best).is_some_and(|(t, b)| t <= RECHECK_FACTOR * b))
        };
        let mut seen = Vec::new();
        let tuned = select_among(6, &applicable, &mut run, &mut timer, &mut |d, n| seen.push((d, n))).unwrap();
        assert_eq!((tuned.best, tuned.best_ms), (4, 1.0));
        assert_eq!(candidate(tuned.best, 3), (1, SplitChoice::Wide));
        assert_eq!(tuned.times, vec![Some(2.0), Some(2.5), Some(4.0), None, Some(1.0), None]);
        assert!(!ran.borrow().contains(&3) && !ran.borrow().contains(&5), "{:?}", ran.borrow());
        assert!(ran.borrow().contains(&4));
        assert_eq!(seen.last(), Some(&(6, 6)));
        let info = KernelInfo { configs: &CONFIGS, ..INFO };
        let line = describe_decision(&info, &key(8), &tuned, "tuned");
        assert!(line.contains("config 1 (BLOCK=128, num_warps=4, num_stages=4), wide split, 1.0000 ms [tuned]"), "{line}");
        assert!(line.contains("times (ms; w: wide split) 0: 2.0000, 1: 2.5000, 2: 4.0000, 1w: 1.0000"), "{line}");
    }

    #[test]
    fn writes_rename_a_complete_temporary_file() {
        let dir = temp_dir("atomic");
        let path = dir.join("f.json");
        write_atomic(&path, b"old contents").unwrap();
        // A reader that opened the old file keeps reading the old, complete file.
        let mut old = File::open(&path).unwrap();
        write_atomic(&path, b"new contents, longer").unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut old, &mut s).unwrap();
        assert_eq!(s, "old contents");
        assert_eq!(fs::read_to_string(&path).unwrap(), "new contents, longer");
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            assert_ne!(old.metadata().unwrap().ino(), fs::metadata(&path).unwrap().ino(), "the file was replaced by rename");
        }
        // No temporary files are left behind.
        let names: Vec<String> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["f.json"]);
        // A failed write leaves the old file and no temporary file.
        let err = write_atomic(&dir.join("missing-dir").join("g.json"), b"x").unwrap_err();
        assert!(err.contains("cannot write"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unwritable_directory_is_an_error_message_not_a_panic() {
        let dir = temp_dir("unwritable");
        // A file where the cache directory should be.
        let blocker = dir.join("not-a-dir");
        fs::write(&blocker, b"x").unwrap();
        let cache = DiskCache::new(&blocker);
        let err = cache.store(&key(1), &entry(0), &[], &mut |w| panic!("{w}")).unwrap_err();
        assert!(err.contains("cannot create"), "{err}");
        assert_eq!(cache.lookup(&key(1), &mut |w| panic!("{w}")), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_writers_do_not_corrupt_the_file() {
        let dir = temp_dir("concurrent");
        let cache = DiskCache::new(&dir);
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let cache = cache.clone();
                std::thread::spawn(move || {
                    for i in 0..15 {
                        let k = key(t * 100 + i);
                        cache.store(&k, &entry((t + i) as usize % 3), &[], &mut |w| panic!("{w}")).unwrap();
                        // Readers never see a broken file.
                        assert!(cache.lookup(&key(t * 100), &mut |w| panic!("{w}")).is_some());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..8 {
            for i in 0..15 {
                assert_eq!(cache.lookup(&key(t * 100 + i), &mut |w| panic!("{w}")), Some(entry((t + i) as usize % 3)));
            }
        }
        let left: Vec<String> = fs::read_dir(dir.join("autotune"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A clock that returns the scripted time of the config that last ran.
    struct FakeTimer {
        current: Rc<Cell<usize>>,
        ms: Vec<f64>,
        calls: Sorted<usize, usize>,
    }

    impl Timer for FakeTimer {
        fn time(&mut self, f: &mut dyn FnMut() -> Result<(), LaunchError>) -> Result<f64, LaunchError> {
            f()?;
            let c = self.current.get();
            *self.calls.entry(c).or_default() += 1;
            Ok(self.ms[c])
        }
    }

    fn shared_memory_error(config: usize) -> LaunchError {
        LaunchError::SharedMemory { kernel: "mm", entry: ["mm__c0", "mm__c1", "mm__c2", "mm__c3"][config], requested: 300_000, available: 232_448 }
    }

    #[test]
    fn selection_skips_failures_and_picks_the_fastest() {
        let current = Rc::new(Cell::new(usize::MAX));
        let mut timer = FakeTimer { current: Rc::clone(&current), ms: vec![5.0, 2.0, 3.0, 1.0], calls: Sorted::new() };
        let mut run = |c: usize| {
            current.set(c);
            if c == 3 {
                Err(shared_memory_error(3))
            } else {
                Ok(())
            }
        };
        let mut seen = Vec::new();
        let tuned = select(4, &mut run, &mut timer, &mut |d, n| seen.push((d, n))).unwrap();
        assert_eq!(tuned.best, 1);
        assert_eq!(tuned.best_ms, 2.0);
        assert_eq!(tuned.times, vec![Some(5.0), Some(2.0), Some(3.0), None]);
        assert_eq!(tuned.skipped.len(), 1);
        assert_eq!(tuned.skipped[0].0, 3);
        assert!(tuned.skipped[0].1.contains("300000 bytes of shared memory"), "{}", tuned.skipped[0].1);
        assert_eq!(seen, [(1, 4), (2, 4), (3, 4), (4, 4)]);
        // Warm-up + estimate + repetitions for each config that ran: at least MIN_REPS timed runs.
        assert!(timer.calls.values().all(|&c| c > MIN_REPS), "{:?}", timer.calls);
        // The failing config ran only its warm-up.
        assert_eq!(timer.calls.get(&3), None);
        let info = KernelInfo { configs: &CONFIGS, ..INFO };
        let line = describe_decision(&info, &key(8), &Tuned { best: 1, ..tuned }, "tuned");
        assert!(line.starts_with("autotuning mm [M=8, N=64] (None,): config 1 (BLOCK=128, num_warps=4, num_stages=4), 2.0000 ms [tuned]"), "{line}");
        // Three configs: candidate 3 is config 0 with the wide split.
        assert!(line.contains("; skipped config 0w: kernel `mm` (entry `mm__c3`) needs 300000 bytes"), "{line}");
    }

    #[test]
    fn slow_configs_are_pruned_and_fast_kernels_get_more_reps() {
        let current = Rc::new(Cell::new(0));
        let mut timer = FakeTimer { current: Rc::clone(&current), ms: vec![1.0, 100.0, 0.001], calls: Sorted::new() };
        let mut run = |c: usize| {
            current.set(c);
            Ok(())
        };
        let tuned = select(3, &mut run, &mut timer, &mut |_, _| {}).unwrap();
        assert_eq!(tuned.best, 2);
        // Config 1 is 100x slower than config 0: warm-up and one timed run only.
        assert_eq!(timer.calls[&1], 2);
        assert_eq!(timer.calls[&2], 1 + MAX_REPS);
        assert_eq!(timer.calls[&0], 1 + MAX_REPS.min((REP_BUDGET_MS / 1.0) as usize).max(MIN_REPS));
    }

    #[test]
    fn close_configs_are_timed_again_and_keep_their_faster_median() {
        // Config 1 is disturbed during the first pass (1.2 ms instead of 0.8); config 2 is 1.5x
        // the best, outside RECHECK_FACTOR; config 3 is within it but slower on both passes.
        let current = Rc::new(Cell::new(0));
        let calls: Rc<RefCell<Sorted<usize, usize>>> = Rc::default();
        struct Disturbed {
            current: Rc<Cell<usize>>,
            calls: Rc<RefCell<Sorted<usize, usize>>>,
        }
        impl Timer for Disturbed {
            fn time(&mut self, f: &mut dyn FnMut() -> Result<(), LaunchError>) -> Result<f64, LaunchError> {
                f()?;
                let c = self.current.get();
                let mut calls = self.calls.borrow_mut();
                let k = calls.entry(c).or_default();
                *k += 1;
                let first_pass = *k <= 1 + MAX_REPS.min((REP_BUDGET_MS / 1.2) as usize);
                Ok(match c {
                    0 => 1.0,
                    1 if first_pass => 1.2,
                    1 => 0.8,
                    2 => 1.5,
                    _ => 1.1,
                })
            }
        }
        let mut timer = Disturbed { current: Rc::clone(&current), calls: Rc::clone(&calls) };
        let mut run = |c: usize| {
            current.set(c);
            Ok(())
        };
        let mut seen = Vec::new();
        let tuned = select(4, &mut run, &mut timer, &mut |d, n| seen.push((d, n))).unwrap();
        assert_eq!((tuned.best, tuned.best_ms), (1, 0.8));
        assert_eq!(tuned.times, vec![Some(1.0), Some(0.8), Some(1.5), Some(1.1)]);
        assert_eq!(seen, [(1, 4), (2, 4), (3, 4), (4, 4)], "progress covers the first pass");
        let calls = calls.borrow();
        // Configs 0, 3 and 1 (the three within 1.3x of 1.0) ran twice; config 2 once.
        let once = |ms: f64| 1 + MAX_REPS.min((REP_BUDGET_MS / ms) as usize).max(MIN_REPS);
        assert_eq!(calls[&2], once(1.5));
        assert_eq!(calls[&0], 2 * once(1.0));
        assert_eq!(calls[&3], 2 * once(1.1));
        assert_eq!(calls[&1], once(1.2) + once(0.8));
        // A single config, or none close to the best: no second pass.
        let mut timer = FakeTimer { current: Rc::clone(&current), ms: vec![1.0, 2.0], calls: Sorted::new() };
        select(2, &mut run, &mut timer, &mut |_, _| {}).unwrap();
        assert_eq!(timer.calls[&0], once(1.0));
    }

    #[test]
    fn all_failing_returns_the_first_error() {
        let mut timer = FakeTimer { current: Rc::new(Cell::new(0)), ms: vec![1.0; 3], calls: Sorted::new() };
        let mut run = |c: usize| Err(shared_memory_error(c));
        let err = select(3, &mut run, &mut timer, &mut |_, _| {}).unwrap_err();
        assert_eq!(err, shared_memory_error(0));
        let err = select(0, &mut run, &mut timer, &mut |_, _| {}).unwrap_err();
        assert!(matches!(err, LaunchError::NoInstance { .. }));
    }

    #[test]
    fn cpu_arguments_get_the_first_config_without_running() {
        let t = crate::Tensor::<crate::f16>::zeros(&crate::Device::cpu(), &[4]).unwrap();
        let args = [crate::launch::ptr_arg("a", &t)];
        let i = autotune(&INFO, &args, &[1, 2], "()", &mut |_| panic!("must not run on the CPU")).unwrap();
        assert_eq!(i, Tuning::default());
        assert_eq!(autotune(&INFO, &[], &[1, 2], "()", &mut |_| panic!("no device")).unwrap().config, 0);
    }
}
