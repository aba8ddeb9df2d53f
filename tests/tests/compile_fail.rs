//! The compile-time diagnostics of the block language, as trybuild snapshots.
//!
//! `tests/ui/<rule>/<case>.rs` must fail to compile with exactly the diagnostics of the
//! `.stderr` next to it (one per case, at the offending expression; `ui/errors/` shows that
//! errors are collected and do not cascade). `tests/pass/*.rs` must compile and run: they
//! launch on the CPU and assert results. `tests/ui/regress/` pins every macro bug found so far
//! (panics, cascades, missing diagnostics) and `tests/ui/fuzz/` the crashes found by fuzzing.
//!
//! Regenerate the snapshots with `TRYBUILD=overwrite cargo test -p tests --test compile_fail`
//! and review every changed `.stderr`. The snapshots match the pinned toolchain
//! (rust-toolchain.toml).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*/*.rs");
}

#[test]
fn pass() {
    let t = trybuild::TestCases::new();
    t.pass("tests/pass/*.rs");
}
