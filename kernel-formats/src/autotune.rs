//! The autotuning cache: one JSON file per kernel, `<cache dir>/autotune/<crate>.<kernel>.json`.
//!
//! ```json
//! {"format": "kernel-rs-autotune", "version": 1, "kernel": "matmul_kernel", "crate": "examples",
//!  "entries": {"<key text>": {"config": 2, "config_text": "BLOCK_SIZE_M=128, ...", "ms": 1.92,
//!                             "split": "auto", "key": {...components...},
//!                             "skipped": [{"config": 0, "reason": "..."}]}}}
//! ```
//!
//! The key text of an entry is everything that selects a decision, on one line (see
//! `kernel-runtime`'s autotuning docs); `key` repeats its components for people reading the
//! file. A file of another `format` or `version` is not read ([`CacheFile::from_json`]). An
//! entry whose body is malformed is kept as it is ([`StoredEntry::Unreadable`]): a reader
//! treats it as a miss, and the next write of that key replaces it.
//!
//! ```
//! use kernel_formats::autotune::{CacheEntry, CacheFile, StoredEntry};
//! let mut file = CacheFile::new("examples", "matmul_kernel");
//! let entry = CacheEntry { config: 2, config_text: "BLOCK=64".into(), ms: Some(1.5), split: None, key: None, skipped: vec![] };
//! file.entries.insert("key text".into(), StoredEntry::Valid(entry.clone()));
//! let back = CacheFile::from_json(&file.to_json()).unwrap();
//! assert_eq!(back.entry("key text"), Some(&entry));
//! assert!(CacheFile::from_json("{\"format\": \"kernel-rs-autotune\", \"version\": 7}").unwrap_err().to_string().contains("version 7"));
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The `format` field of a cache file.
pub const FORMAT: &str = "kernel-rs-autotune";
/// The `version` field this crate reads and writes; files of another version are not read.
pub const VERSION: u64 = 1;

/// One kernel's cache file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheFile {
    /// [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u64,
    /// The kernel's name.
    pub kernel: String,
    /// The crate that defines it.
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// Decisions by key text.
    pub entries: BTreeMap<String, StoredEntry>,
}

/// An entry as the file holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // a file holds a few entries; boxing buys nothing
pub enum StoredEntry {
    /// A decision.
    Valid(CacheEntry),
    /// Something that is not a decision (a field missing or of the wrong type), kept as it is
    /// so that rewriting the file loses nothing.
    Unreadable(serde_json::Value),
}

/// One autotuning decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// Index of the chosen config among the kernel's configs.
    pub config: usize,
    /// That config's `Display` when it was tuned (a reader checks it still matches).
    pub config_text: String,
    /// Median time of the chosen config in milliseconds (`null` when not finite).
    pub ms: Option<f64>,
    /// The split plan its launches run under: `"auto"` or `"wide"`; `None` (entries written
    /// before split choices existed) means `"auto"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<String>,
    /// The components of the entry's key, for people reading the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<KeyComponents>,
    /// Configs that could not run, with the reason.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
}

/// What an entry's key text is made of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyComponents {
    /// The kernel's name.
    pub kernel: String,
    /// The crate that defines it.
    #[serde(rename = "crate")]
    pub crate_name: String,
    /// Function meta-parameter and launch-time meta values (`(Some("leaky_relu"),)`).
    pub instance: String,
    /// The values of the `key = [...]` parameters.
    pub key: BTreeMap<String, i64>,
    /// The pointer arguments' dtypes, in order.
    pub dtypes: Vec<String>,
    /// GPU name and compute capability (`NVIDIA H100 80GB HBM3 (sm_90)`).
    pub gpu: String,
    /// Hash of the kernel crate's PTX, 16 hex digits.
    pub ptx_hash: String,
    /// `kernel-runtime <version>`.
    pub runtime: String,
}

/// A config that failed to launch while tuning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// Its index.
    pub config: usize,
    /// Why.
    pub reason: String,
}

/// Why a cache file's text is not a usable cache file.
#[derive(Debug)]
pub enum CacheFileError {
    /// It is not JSON.
    Json(serde_json::Error),
    /// It is JSON but not a JSON object.
    NotAnObject,
    /// Its `format` is not [`FORMAT`].
    Format,
    /// It has no `version`.
    NoVersion,
    /// It is of another version.
    Version(u64),
    /// Its fields other than the entries' bodies are missing or mistyped.
    Invalid(serde_json::Error),
}

impl fmt::Display for CacheFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CacheFileError::Json(e) => write!(f, "it is not valid JSON ({e})"),
            CacheFileError::NotAnObject => f.write_str("it is not a JSON object"),
            CacheFileError::Format => write!(f, "its `format` is not \"{FORMAT}\""),
            CacheFileError::NoVersion => f.write_str("it has no `version`"),
            CacheFileError::Version(v) => write!(f, "it has format version {v}, this build reads {VERSION}"),
            CacheFileError::Invalid(e) => write!(f, "it is not a cache file ({e})"),
        }
    }
}

impl std::error::Error for CacheFileError {}

impl CacheFile {
    /// An empty file for `kernel` of `crate_name`.
    pub fn new(crate_name: &str, kernel: &str) -> Self {
        CacheFile {
            format: FORMAT.to_string(),
            version: VERSION,
            kernel: kernel.to_string(),
            crate_name: crate_name.to_string(),
            entries: BTreeMap::new(),
        }
    }

    /// Parses a cache file, checking its `format` and `version` first.
    ///
    /// # Errors
    /// A [`CacheFileError`] saying what is wrong, in words fit for a one-line warning.
    pub fn from_json(text: &str) -> Result<Self, CacheFileError> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(CacheFileError::Json)?;
        let obj = value.as_object().ok_or(CacheFileError::NotAnObject)?;
        if obj.get("format").and_then(serde_json::Value::as_str) != Some(FORMAT) {
            return Err(CacheFileError::Format);
        }
        match obj.get("version").and_then(serde_json::Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => return Err(CacheFileError::Version(v)),
            None => return Err(CacheFileError::NoVersion),
        }
        serde_json::from_value(value).map_err(CacheFileError::Invalid)
    }

    /// The file as written: pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_string_pretty(self).expect("a cache file serializes")
    }

    /// The decision stored under `key`, unless there is none or it is unreadable.
    pub fn entry(&self, key: &str) -> Option<&CacheEntry> {
        match self.entries.get(key)? {
            StoredEntry::Valid(e) => Some(e),
            StoredEntry::Unreadable(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> CacheEntry {
        CacheEntry {
            config: 2,
            config_text: "BLOCK=64, num_warps=4, num_stages=3".into(),
            ms: Some(0.25),
            split: Some("wide".into()),
            key: Some(KeyComponents {
                kernel: "mm".into(),
                crate_name: "examples".into(),
                instance: "(None,)".into(),
                key: [("M".to_string(), 4096)].into(),
                dtypes: vec!["f16".into(), "f32".into()],
                gpu: "GPU (sm_90)".into(),
                ptx_hash: "0000000000000abc".into(),
                runtime: "kernel-runtime 0.1.0".into(),
            }),
            skipped: vec![Skipped { config: 0, reason: "too much shared memory".into() }],
        }
    }

    /// The layout version 1 files have (written by hand before these types existed).
    #[test]
    fn json_layout_is_version_1s() {
        let mut f = CacheFile::new("examples", "mm");
        f.entries.insert("k".into(), StoredEntry::Valid(entry()));
        let v: serde_json::Value = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(v["format"], FORMAT);
        assert_eq!(v["version"], 1);
        assert_eq!(v["crate"], "examples");
        let e = &v["entries"]["k"];
        assert_eq!(e["config"], 2);
        assert_eq!(e["split"], "wide");
        assert_eq!(e["key"]["crate"], "examples");
        assert_eq!(e["key"]["key"]["M"], 4096);
        assert_eq!(e["key"]["dtypes"], json!(["f16", "f32"]));
        assert_eq!(e["skipped"], json!([{"config": 0, "reason": "too much shared memory"}]));
        assert_eq!(CacheFile::from_json(&f.to_json()).unwrap(), f);
    }

    #[test]
    fn malformed_entries_are_kept_but_not_read() {
        let text = json!({"format": FORMAT, "version": 1, "kernel": "mm", "crate": "examples", "entries": {
            "bad": {"config": "three"},
            "old": {"config": 1, "config_text": "B=1", "ms": null},
        }})
        .to_string();
        let f = CacheFile::from_json(&text).unwrap();
        assert_eq!(f.entry("bad"), None);
        assert!(matches!(&f.entries["bad"], StoredEntry::Unreadable(v) if v["config"] == "three"));
        let old = f.entry("old").unwrap();
        assert_eq!((old.config, old.ms, old.split.as_deref(), old.skipped.len()), (1, None, None, 0));
        // Rewriting keeps the unreadable entry as it was.
        let again: serde_json::Value = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(again["entries"]["bad"], json!({"config": "three"}));
    }

    #[test]
    fn other_files_are_errors_that_say_why() {
        let why = |t: &str| CacheFile::from_json(t).unwrap_err().to_string();
        assert!(why("\u{0}not json").contains("not valid JSON"));
        assert_eq!(why("[1]"), "it is not a JSON object");
        assert!(why(r#"{"format": "other", "version": 1}"#).contains("`format`"));
        assert_eq!(why(r#"{"format": "kernel-rs-autotune"}"#), "it has no `version`");
        assert_eq!(why(r#"{"format": "kernel-rs-autotune", "version": 999}"#), "it has format version 999, this build reads 1");
        assert!(why(r#"{"format": "kernel-rs-autotune", "version": 1, "kernel": "mm", "crate": "c"}"#).contains("entries"));
    }
}
