//! The examples' logger: the runtime and `kernel-bench` report through the `log` crate
//! (autotuning decisions and progress, stale caches or PTX); an application decides where
//! that goes. The example binaries send it to stderr as plain lines, as a terminal tool would.

use std::io::Write;

/// Installs `env_logger` on stderr: level `info` and above unless `RUST_LOG` says otherwise
/// (`RUST_LOG=kernel_runtime=debug` shows every autotuning decision; `RUST_LOG=off` silences
/// everything), warnings prefixed with `warning: `, other lines as they are. Does nothing when
/// a logger is already installed.
pub fn init_logging() {
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format(|buf, record| match record.level() {
            log::Level::Error => writeln!(buf, "error: {}", record.args()),
            log::Level::Warn => writeln!(buf, "warning: {}", record.args()),
            _ => writeln!(buf, "{}", record.args()),
        })
        .try_init();
}
