//! The compile-time diagnostics of the block language, as trybuild snapshots.
//!
//! `tests/ui/<rule>/<case>.rs` must fail to compile with exactly the diagnostics of the
//! `.stderr` next to it (one per case, at the offending expression; `ui/errors/` shows that
//! errors are collected and do not cascade). `tests/pass/*.rs` must compile and run: they
//! launch on the CPU and assert results. `tests/ui/regress/` pins every macro bug found so far
//! (panics, cascades, missing diagnostics) and `tests/ui/fuzz/` the crashes found by fuzzing.
//!
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test -p compile-fail`
//! and review every changed `.stderr`. The snapshots match the pinned toolchain
//! (rust-toolchain.toml).

use std::sync::Once;

#[test]
fn ui() {
    build_dependencies_once();
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}

#[test]
fn pass() {
    build_dependencies_once();
    let t = trybuild::TestCases::new();
    t.pass("tests/pass/*.rs");
}

/// The rustflags trybuild (1.0) gives the cases' builds.
const TRYBUILD_RUSTFLAGS: [&str; 6] = ["--cfg", "trybuild", "--verbose", "-A", "dead_code", "--diagnostic-width=140"];

/// trybuild builds the dependencies in a cargo run of their own, with its rustflags less
/// `--diagnostic-width`, then the cases with them all; cargo hashes the flags into every
/// artifact, so each dependency would be built twice. The cargo runs inherit this process's
/// environment, and `CARGO_ENCODED_RUSTFLAGS` overrides the flags trybuild passes: with
/// trybuild's full set there, both runs share one build of each dependency (`ui` checks them,
/// `pass` builds them), and the diagnostics are those trybuild's flags give. Without debug
/// info the dependencies build faster; the cases' output does not depend on it.
fn build_dependencies_once() {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        if std::env::var_os("CARGO_ENCODED_RUSTFLAGS").is_none() {
            std::env::set_var("CARGO_ENCODED_RUSTFLAGS", TRYBUILD_RUSTFLAGS.join("\x1f"));
        }
        std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "0");
    });
}
