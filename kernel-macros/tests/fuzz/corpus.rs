//! The inputs fuzzing starts from, read from the workspace's kernel sources:
//! - valid seeds: every top-level `#[kernel]` fn and `#[kernel_module]` mod of
//!   `examples/src/*.rs`, `tests/src/kernels.rs`, `compile-fail/tests/pass/*.rs` and
//!   `kernel-macros/tests/codegen/in/*.rs`, one seed each; each must expand without errors;
//! - invalid seeds: the kernels of each compile-fail case `compile-fail/tests/ui/*/*.rs` (one seed per
//!   case; most report errors, some are rustc's errors on code around a valid kernel), and
//!   `MULTI_ERROR`, kernels with many errors at once, which must report errors;
//! - regressions: the crashes fuzzing found, `compile-fail/tests/ui/fuzz/*.rs` (trybuild cases, with
//!   `FUZZ_CASES` saying whether the macros report errors on each) and `REGRESSIONS` (inputs
//!   with no trybuild case).

use super::harness::{run_source, Outcome};
use crate::kernel;
use quote::quote;
use std::path::{Path, PathBuf};

/// What a seed must expand to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Expect {
    /// Valid Rust, without errors.
    Clean,
    /// Compile errors.
    Errors,
    /// Either, without a bug.
    NoBug,
}

pub(super) struct Seed {
    /// Where it comes from: `path` or `path: kernel`.
    pub(super) name: String,
    pub(super) expect: Expect,
    pub(super) src: String,
}

/// Kernels with many errors at once (undeclared and mismatched blocks, a `while`, a broken
/// `#[kernel]` and `#[autotune]`, dtype, shape and mask errors in one body): every error path
/// of one expansion, and mutants that drop some of them.
const MULTI_ERROR: &[(&str, &str)] = &[
    (
        "all_at_once",
        r#"
#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let big = arange(0, 48);
    let v = load(x + offs.to::<f32>());
    while n > 0 {
        return;
    }
}
"#,
    ),
    (
        "autotune_errors",
        r#"
#[kernel(num_warps = 3)]
#[autotune(configs = [config(BLOCK_M = 16, BLOCK_N = 16, num_stages = 9), config(BLOCK_M = 32)], key = [x, m])]
fn k<const BLOCK_M: i32, const BLOCK_N: i32, const F: Option<Func>>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK_M) + arange(0, BLOCK_N);
    let z = zeros::<f32>([BLOCK_M - 1, 48]);
}
"#,
    ),
    (
        "type_errors",
        r#"
#[kernel(BLOCK = [16, 48])]
fn k<const BLOCK: i32>(x: Ptr<f16>, y: Ptr<bf16>, n: i32, u: u32) {
    let offs = arange(0, BLOCK);
    let a = load(x + offs) + load(y + offs);
    let b = offs + u;
    let c = offs.reshape([4, 8]).broadcast_to([32]).trans();
    store(x + offs, load(x + offs).to::<f32>(), offs);
    let d = dot(load(x + offs), load(x + offs));
}
"#,
    ),
];

/// Whether the macros report errors on each crash case `compile-fail/tests/ui/fuzz/<name>.rs` (the
/// others expand cleanly: the case's one diagnostic is rustc's, on its `main`).
const FUZZ_CASES: &[(&str, bool)] = &[
    ("block_elements_overflow", true),
    ("f32_literal_out_of_range", true),
    ("raw_kernel_name", false),
    ("raw_meta_name", false),
    ("raw_ptr_param", false),
    ("too_many_instances", true),
];

/// Crashes found by fuzzing that have no trybuild case: `(name, reports errors, source)`.
const REGRESSIONS: &[(&str, bool, &str)] = &[
    (
        // `1e39` as a weak literal that adopts f32: infinity at run time, like f16 (the f32
        // literal `1e39f32` is `ui/fuzz/f32_literal_out_of_range.rs`).
        "f32_weak_literal_infinite",
        false,
        r#"
#[kernel]
fn k(x: Ptr<f32>) {
    store(x, 1e39);
}
"#,
    ),
    (
        // `ui/fuzz/block_elements_overflow.rs` through broadcasting and an i64 meta-parameter.
        "block_elements_overflow_meta",
        true,
        r#"
#[kernel(B = [1099511627776])]
fn k<const B: i64>(x: Ptr<f32>) {
    let a = arange(0, B).as_col() + arange(0, B).as_row();
    store(x, a.sum(0).sum(0).to::<f32>());
}
"#,
    ),
    (
        // A reduction of a block of 2^40 elements (the most a block holds): planned in
        // registers, its slot list would take 2^32 entries; it goes through shared memory.
        "reduce_largest_block",
        false,
        r#"
#[kernel(B = [1048576])]
fn k<const B: i32>(x: Ptr<f32>) {
    let m = zeros::<f32>([B, B]).max(0);
    store(x + arange(0, B), m);
}
"#,
    ),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("kernel-macros lies in the workspace").to_path_buf()
}

/// The `.rs` files of `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
}

/// The subdirectories of `dir`, sorted.
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo()).unwrap_or(path).display().to_string()
}

/// Whether `item` is a top-level `#[kernel]` fn or `#[kernel_module]` mod, and its name.
fn kernel_item(item: &syn::Item) -> Option<String> {
    match item {
        syn::Item::Fn(f) if f.attrs.iter().any(|a| kernel::is_attr(a, "kernel")) => Some(f.sig.ident.to_string()),
        syn::Item::Mod(m) if m.attrs.iter().any(|a| kernel::is_attr(a, "kernel_module")) => Some(m.ident.to_string()),
        _ => None,
    }
}

/// The kernel items of the file at `path`, as source text with their names (`None` when it
/// does not parse).
fn kernel_items(path: &Path) -> Option<Vec<(String, String)>> {
    let file = syn::parse_file(&read(path)).ok()?;
    Some(file.items.iter().filter_map(|item| kernel_item(item).map(|name| (name, quote!(#item).to_string()))).collect())
}

/// Every seed (see the module documentation).
pub(super) fn seeds() -> Vec<Seed> {
    let root = repo();
    let mut valid_files = rust_files(&root.join("examples/src"));
    valid_files.push(root.join("tests/src/kernels.rs"));
    valid_files.extend(rust_files(&root.join("compile-fail/tests/pass")));
    valid_files.extend(rust_files(&root.join("kernel-macros/tests/codegen/in")));
    let mut seeds = Vec::new();
    for path in valid_files {
        let items = kernel_items(&path).unwrap_or_else(|| panic!("{} does not parse", path.display()));
        for (name, src) in items {
            seeds.push(Seed { name: format!("{}: {name}", relative(&path)), expect: Expect::Clean, src });
        }
    }
    for dir in subdirs(&root.join("compile-fail/tests/ui")) {
        for path in rust_files(&dir) {
            // A case that syn rejects is a seed as it is (its mutants may parse).
            let src = match kernel_items(&path) {
                Some(items) if items.is_empty() => continue,
                Some(items) => items.into_iter().map(|(_, s)| s).collect::<Vec<_>>().join("\n"),
                None => read(&path),
            };
            seeds.push(Seed { name: relative(&path), expect: Expect::NoBug, src });
        }
    }
    for (name, src) in MULTI_ERROR {
        seeds.push(Seed { name: (*name).to_string(), expect: Expect::Errors, src: (*src).to_string() });
    }
    seeds
}

/// Every seed expands as it must.
pub(super) fn check_seeds(seeds: &[Seed]) {
    for s in seeds {
        let o = run_source(&s.src);
        let ok = match s.expect {
            Expect::Clean => o == Outcome::Expanded { errors: false },
            Expect::Errors => o == Outcome::Expanded { errors: true },
            Expect::NoBug => !o.is_bug(),
        };
        assert!(ok, "seed `{}` (expected {:?}) expanded to {o:?}:\n{}", s.name, s.expect, s.src);
    }
}

/// Every crash found so far expands, with errors or without as recorded.
pub(super) fn check_regressions() {
    let mut cases = Vec::new();
    for path in rust_files(&repo().join("compile-fail/tests/ui/fuzz")) {
        let name = path.file_stem().expect("a file name").to_string_lossy().into_owned();
        let errors = FUZZ_CASES.iter().find(|(n, _)| *n == name).map(|c| c.1).unwrap_or_else(|| {
            panic!("{}: add it to FUZZ_CASES (kernel-macros/tests/fuzz/corpus.rs), saying whether the macros report errors on it", relative(&path))
        });
        cases.push((relative(&path), errors, read(&path)));
    }
    assert_eq!(cases.len(), FUZZ_CASES.len(), "FUZZ_CASES names a case that compile-fail/tests/ui/fuzz/ lacks");
    cases.extend(REGRESSIONS.iter().map(|(name, errors, src)| ((*name).to_string(), *errors, (*src).to_string())));
    for (name, errors, src) in cases {
        let o = run_source(&src);
        assert_eq!(o, Outcome::Expanded { errors }, "regression `{name}`:\n{src}");
    }
}
