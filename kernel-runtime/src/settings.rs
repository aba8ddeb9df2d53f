//! Process-wide settings: by code first ([`Settings::install`]), environment variables second.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::split::SplitPolicy;

/// The runtime's process-wide settings: where the autotuning cache and the PTX are, whether
/// launches wait for the GPU, whether autotuning decisions are reported, and the GPU features
/// to use.
///
/// **Precedence.** A field set by code (on the value passed to [`Settings::install`]) wins;
/// [`Settings::from_env`] gives each field from its environment variable, and the built-in
/// default where the variable is unset or empty (a field without a variable is set by code
/// only). The runtime reads the settings at its first
/// launch (or the first call that needs one of them) and keeps them for the process: install
/// them before that, typically at the start of `main`.
///
/// | field | variable | default |
/// |---|---|---|
/// | [`cache_dir`](Self::cache_dir) | `KERNEL_CACHE_DIR` | `$XDG_CACHE_HOME/kernel-rs`, else `$HOME/.cache/kernel-rs` |
/// | [`ptx_dir`](Self::ptx_dir) | `KERNEL_PTX_DIR` | none: search `target/ptx/<arch>/` upwards |
/// | [`jit_ptx`](Self::jit_ptx) | `KERNEL_JIT_PTX=1` | false |
/// | [`sync`](Self::sync) | `KERNEL_SYNC=1` | false |
/// | [`print_autotuning`](Self::print_autotuning) | `KERNEL_PRINT_AUTOTUNING=1` | false |
/// | [`tma`](Self::tma) | none | true |
/// | [`split`](Self::split) | `KERNEL_SPLIT=auto\|off\|N` | `auto` |
/// | [`cublas_dir`](Self::cublas_dir) | `KERNEL_CUBLAS_DIR` | none |
///
/// ```
/// use kernel_runtime::Settings;
/// let mut s = Settings::from_env();
/// s.cache_dir = Some(std::env::temp_dir().join("my-app-kernels"));
/// s.sync = true;
/// s.install().expect("installed before the first launch");
/// assert_eq!(Settings::current().sync, true);
/// // Once installed (or read by the runtime), the settings cannot change.
/// assert!(Settings::from_env().install().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// The autotuning cache directory (files in `<dir>/autotune/`); `None`: no disk cache,
    /// decisions are kept for the process only.
    pub cache_dir: Option<PathBuf>,
    /// Where kernels' PTX is loaded from: `<dir>/<crate>.ptx` or `<dir>/<arch>/<crate>.ptx`,
    /// before the search of `target/ptx/<arch>/` from the working directory and the kernel
    /// crate's directory upwards.
    pub ptx_dir: Option<PathBuf>,
    /// Load the PTX (the driver's JIT compiler) even when the matching cubin `build-ptx`
    /// assembled is there.
    pub jit_ptx: bool,
    /// Wait for every GPU launch to finish, so that a failing kernel is reported by its own
    /// launch instead of the next synchronizing call.
    pub sync: bool,
    /// Report every autotuning decision (kernel, key, chosen config, its time, the other
    /// configs' times, skipped configs) at `log` level `info` (`debug` otherwise), target
    /// `kernel_runtime::autotune`.
    pub print_autotuning: bool,
    /// Build Hopper tensor maps for the entries that can use them; `false`: those entries copy
    /// operand tiles with `cp.async` instead (to compare the two; set by code only).
    pub tma: bool,
    /// When launches split their programs' K loops over several blocks.
    pub split: SplitPolicy,
    /// Where [`baseline`](crate::baseline) looks for `libcublas.so.13` when the dynamic
    /// loader does not find it.
    pub cublas_dir: Option<PathBuf>,
}

/// Why [`Settings::install`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The settings were already installed, or the runtime already read them (a launch ran).
    #[error(
        "the kernel runtime's settings are already in use ({current:?}): install them once, \
         before the first launch"
    )]
    AlreadyInUse {
        /// The settings in force.
        current: Box<Settings>,
    },
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

impl Settings {
    /// The settings the environment asks for, with the built-in defaults for variables that
    /// are unset or empty (see the table above). An invalid `KERNEL_SPLIT` is logged as a
    /// warning and gives the default.
    pub fn from_env() -> Settings {
        let (settings, warnings) = Settings::from_vars(|name| std::env::var(name).ok());
        for w in warnings {
            log::warn!("{w}");
        }
        settings
    }

    /// [`Settings::from_env`] over `var` (an environment; empty values count as unset), and
    /// the warnings about invalid values.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> (Settings, Vec<String>) {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        let flag = |name: &str| var(name).is_some_and(|v| v == "1");
        let mut warnings = Vec::new();
        let split = SplitPolicy::parse(var("KERNEL_SPLIT").as_deref()).unwrap_or_else(|why| {
            warnings.push(format!("{why}; using auto"));
            SplitPolicy::default()
        });
        let cache_dir = match var("KERNEL_CACHE_DIR") {
            Some(dir) => Some(PathBuf::from(dir)),
            None => match var("XDG_CACHE_HOME") {
                Some(xdg) => Some(Path::new(&xdg).join("kernel-rs")),
                None => var("HOME").map(|home| Path::new(&home).join(".cache").join("kernel-rs")),
            },
        };
        let settings = Settings {
            cache_dir,
            ptx_dir: var("KERNEL_PTX_DIR").map(PathBuf::from),
            jit_ptx: flag("KERNEL_JIT_PTX"),
            sync: flag("KERNEL_SYNC"),
            print_autotuning: flag("KERNEL_PRINT_AUTOTUNING"),
            tma: true,
            split,
            cublas_dir: var("KERNEL_CUBLAS_DIR").map(PathBuf::from),
        };
        (settings, warnings)
    }

    /// Makes these the process's settings.
    ///
    /// # Errors
    /// [`SettingsError::AlreadyInUse`] when settings were installed before or the runtime
    /// already read them (from the environment, at its first launch); they stay as they are.
    pub fn install(self) -> Result<(), SettingsError> {
        SETTINGS.set(self).map_err(|_| SettingsError::AlreadyInUse { current: Box::new(Settings::current().clone()) })
    }

    /// The process's settings: the installed ones, else (and from then on) those of
    /// [`Settings::from_env`].
    pub fn current() -> &'static Settings {
        SETTINGS.get_or_init(Settings::from_env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_string())
    }

    #[test]
    fn defaults_without_variables() {
        let (s, warnings) = Settings::from_vars(env(&[("HOME", "/h")]));
        assert!(warnings.is_empty());
        assert_eq!(
            s,
            Settings {
                cache_dir: Some(PathBuf::from("/h/.cache/kernel-rs")),
                ptx_dir: None,
                jit_ptx: false,
                sync: false,
                print_autotuning: false,
                tma: true,
                split: SplitPolicy::Auto(crate::DEFAULT_MAX_PARTS),
                cublas_dir: None,
            }
        );
    }

    #[test]
    fn every_variable_sets_its_field() {
        let (s, warnings) = Settings::from_vars(env(&[
            ("KERNEL_CACHE_DIR", "/k"),
            ("KERNEL_PTX_DIR", "/p"),
            ("KERNEL_JIT_PTX", "1"),
            ("KERNEL_SYNC", "1"),
            ("KERNEL_PRINT_AUTOTUNING", "1"),
            ("KERNEL_SPLIT", "off"),
            ("KERNEL_CUBLAS_DIR", "/c"),
        ]));
        assert!(warnings.is_empty());
        assert_eq!(s.cache_dir, Some(PathBuf::from("/k")));
        assert_eq!(s.ptx_dir, Some(PathBuf::from("/p")));
        assert!(s.jit_ptx && s.sync && s.print_autotuning);
        assert_eq!(s.split, SplitPolicy::Off);
        assert_eq!(s.cublas_dir, Some(PathBuf::from("/c")));
        // Flags are on only for "1".
        let (s, _) = Settings::from_vars(env(&[("KERNEL_SYNC", "yes")]));
        assert!(!s.sync);
        // Tensor maps are turned off by code only.
        let (s, _) = Settings::from_vars(env(&[("KERNEL_NO_TMA", "1")]));
        assert!(s.tma);
    }

    #[test]
    fn cache_dir_precedence() {
        let dir = |pairs| Settings::from_vars(env(pairs)).0.cache_dir;
        assert_eq!(dir(&[("KERNEL_CACHE_DIR", "/k"), ("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]), Some(PathBuf::from("/k")));
        assert_eq!(dir(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")]), Some(PathBuf::from("/x/kernel-rs")));
        // Empty values count as unset.
        assert_eq!(dir(&[("KERNEL_CACHE_DIR", ""), ("HOME", "/h")]), Some(PathBuf::from("/h/.cache/kernel-rs")));
        assert_eq!(dir(&[]), None);
    }

    #[test]
    fn an_invalid_split_is_a_warning_and_the_default() {
        let (s, warnings) = Settings::from_vars(env(&[("KERNEL_SPLIT", "lots")]));
        assert_eq!(s.split, SplitPolicy::default());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("KERNEL_SPLIT=\"lots\"") && warnings[0].ends_with("using auto"), "{}", warnings[0]);
    }
}
