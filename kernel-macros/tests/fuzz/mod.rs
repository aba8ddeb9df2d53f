//! Fuzzing of the front end: no input makes `#[kernel]` or `#[kernel_module]` panic.
//!
//! The macros' own entry points (`kernel::expand`, `module::expand`) run as a library
//! (`harness.rs`), on kernel sources that are
//! - seeds (`corpus.rs`: the kernels of the examples, the test suite and the codegen corpus,
//!   the compile-fail cases, and a few kernels with many errors) mutated at the token level
//!   (`mutate.rs`): tokens deleted, duplicated, swapped, identifiers replaced by builtin,
//!   parameter, meta and dtype names or random words, literals replaced by extreme values,
//!   attribute values and config lists changed, groups re-delimited;
//! - seeds mutated at the syntax level: expressions wrapped (`.as_col()`, `.to::<f16>()`,
//!   `dot(x, x)`, ...) or replaced by generated ones, statements deleted, duplicated, swapped
//!   and inserted;
//! - whole kernels generated from a small grammar (`grammar.rs`: signature, attributes,
//!   helpers, body), drawing names and literals from `vocab.rs`.
//!
//! Each input is lexed (proc_macro2) and parsed (syn) as rustc and the macro shims would;
//! inputs that do not parse are counted as rejected by syn and dropped. Every expansion runs
//! under `catch_unwind`: a panic is a bug. The expansion must be valid Rust (a `syn::File`)
//! or contain `compile_error!` (clean expansions over `MAX_CHECKED_TOKENS` are counted but not
//! re-parsed). Mutants that expand without errors join a pool that later inputs are mutated
//! from, so the backends see many valid kernels (`driver.rs`). `KERNEL_DUMP` is unset first.
//!
//! - `fuzz_quick` checks the regressions and the seeds and fuzzes a fixed budget on every
//!   `cargo test`;
//! - `fuzz_long` (ignored) runs `KERNEL_FUZZ_ITERS` inputs (default 200 000) on
//!   `KERNEL_FUZZ_THREADS` threads from `KERNEL_FUZZ_SEED`, optionally stopping after
//!   `KERNEL_FUZZ_SECS`, and prints every distinct panic with an automatically reduced input:
//!
//! ```text
//! CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true \
//!     cargo test -p kernel-macros --release -- --ignored fuzz_long --nocapture
//! ```
//!
//! (release builds have no overflow checks by default, but proc macros are usually built in
//! the dev profile where an overflow panics: keep them on while fuzzing.)
//!
//! - `fuzz_one` (ignored) runs the file `KERNEL_FUZZ_INPUT` and prints the outcome and the
//!   error messages, for minimizing a crash by hand.
//!
//! Every crash found is minimized by hand, fixed, and added as a trybuild case to
//! `compile-fail/tests/ui/fuzz/` (with its diagnostic) and to `FUZZ_CASES` in `corpus.rs`.

mod corpus;
mod driver;
mod grammar;
mod harness;
mod mutate;
mod vocab;

use corpus::{check_regressions, check_seeds, seeds, Seed};
use driver::{env_u64, fuzz, report_bugs, Stats};
use harness::{error_messages, on_big_stack, overflow_checks_on, run_source};
use std::time::{Duration, Instant};

/// The seeds' sources.
fn sources(seeds: &[Seed]) -> Vec<String> {
    seeds.iter().map(|s| s.src.clone()).collect()
}

#[test]
fn fuzz_quick() {
    std::env::remove_var("KERNEL_DUMP");
    let iters = 2_500;
    let stats = on_big_stack(move || {
        check_regressions();
        let seeds = seeds();
        check_seeds(&seeds);
        fuzz(iters, 0x5eed, &sources(&seeds), None, false)
    });
    println!("fuzz_quick: {}", stats.summary());
    assert!(stats.bugs.is_empty(), "the macro panicked or produced invalid output:\n{}", report_bugs(&stats, 300));
    assert!(stats.reached() > iters / 4, "too few inputs reached the macro: {}", stats.summary());
}

#[test]
#[ignore = "long fuzzing run: KERNEL_FUZZ_ITERS, KERNEL_FUZZ_THREADS, KERNEL_FUZZ_SEED, KERNEL_FUZZ_SECS"]
fn fuzz_long() {
    std::env::remove_var("KERNEL_DUMP");
    on_big_stack(check_regressions);
    let iters = env_u64("KERNEL_FUZZ_ITERS", 200_000);
    let threads = env_u64("KERNEL_FUZZ_THREADS", std::thread::available_parallelism().map_or(1, |n| n.get() as u64)).max(1);
    let seed = env_u64("KERNEL_FUZZ_SEED", 1);
    let deadline = std::env::var("KERNEL_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).map(|s| Instant::now() + Duration::from_secs(s));
    if !overflow_checks_on() {
        println!("fuzz_long: WARNING: built without overflow checks, so arithmetic overflows go unnoticed; set CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true");
    }
    let seeds = on_big_stack(|| sources(&seeds()));
    println!("fuzz_long: {iters} inputs on {threads} thread(s) from seed {seed}, {} seeds", seeds.len());
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let seeds = seeds.clone();
            let n = iters / threads + u64::from(t < iters % threads);
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn(move || fuzz(n, seed.wrapping_add(t.wrapping_mul(0x1000_0001)), &seeds, deadline, true))
                .expect("spawn a fuzz thread")
        })
        .collect();
    let mut stats = Stats::default();
    for h in handles {
        stats.merge(h.join().expect("fuzz thread"));
    }
    println!("fuzz_long: {}", stats.summary());
    if stats.slowest.0 > Duration::from_millis(500) {
        println!("fuzz_long: slowest input ({:.1?}):\n{}\n", stats.slowest.0, stats.slowest.1);
    }
    let bugs = on_big_stack({
        let stats_bugs = stats.bugs.clone();
        move || report_bugs(&Stats { bugs: stats_bugs, ..Stats::default() }, 4000)
    });
    println!("{bugs}");
    assert!(stats.bugs.is_empty(), "{} distinct bug(s) found", stats.bugs.len());
}

/// Runs the file `KERNEL_FUZZ_INPUT` through the harness and prints what happened (for
/// minimizing a crash by hand).
#[test]
#[ignore = "runs one input: KERNEL_FUZZ_INPUT=path"]
fn fuzz_one() {
    std::env::remove_var("KERNEL_DUMP");
    let path = std::env::var("KERNEL_FUZZ_INPUT").expect("set KERNEL_FUZZ_INPUT to a source file");
    let src = std::fs::read_to_string(&path).expect("read KERNEL_FUZZ_INPUT");
    let t0 = Instant::now();
    let (o, msgs) = on_big_stack(move || (run_source(&src), error_messages(&src)));
    println!("fuzz_one: {o:?} in {:.1?}", t0.elapsed());
    for m in msgs {
        println!("  error: {m}");
    }
}

