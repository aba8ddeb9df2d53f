//! `Settings`: set by code before first use, environment variables as defaults, and their
//! warnings routed through the `log` crate. One test: the settings are process-wide.

use std::path::PathBuf;
use std::sync::Mutex;

use kernel_runtime::{Settings, SettingsError, SplitPolicy};

/// Keeps every record logged, so the test can read what an application's logger would get.
struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0.lock().unwrap().push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()));

#[test]
fn code_sets_what_the_environment_defaults_and_warnings_go_to_the_logger() {
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    // SAFETY: this test binary has a single test, so no other thread reads the environment.
    unsafe {
        std::env::set_var("KERNEL_SPLIT", "lots");
        std::env::set_var("KERNEL_SYNC", "1");
        std::env::set_var("KERNEL_CACHE_DIR", "/from/the/environment");
    }

    let mut s = Settings::from_env();
    // The environment gives the defaults...
    assert!(s.sync);
    assert_eq!(s.cache_dir, Some(PathBuf::from("/from/the/environment")));
    // ... an invalid value is a warning through `log` (not stderr) and the default ...
    assert_eq!(s.split, SplitPolicy::default());
    let records = LOGGER.0.lock().unwrap().clone();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].0, log::Level::Warn);
    assert!(records[0].1.contains("KERNEL_SPLIT=\"lots\""), "{}", records[0].1);

    // ... and code overrides it.
    let dir = std::env::temp_dir().join("kernel-runtime-settings-test");
    s.cache_dir = Some(dir.clone());
    s.sync = false;
    s.print_autotuning = true;
    s.split = SplitPolicy::Off;
    s.clone().install().unwrap();
    let current = Settings::current();
    assert_eq!(current, &s);
    assert_eq!(current.cache_dir.as_deref(), Some(dir.as_path()));
    assert!(!current.sync && current.print_autotuning);

    // Installed settings stay: a second install is refused and says what is in force.
    let err = Settings::from_env().install().unwrap_err();
    let SettingsError::AlreadyInUse { current: in_force } = &err else { panic!("{err:?}") };
    assert_eq!(**in_force, s);
    assert!(err.to_string().contains("before the first launch"), "{err}");
    assert_eq!(Settings::current(), &s);
}
