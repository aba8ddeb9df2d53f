//! Snapshot tests of the code generator: the output of the `#[kernel]` pipeline for a corpus of
//! kernels, compared with checked-in files, so that a change of the lowering shows up as a diff
//! of the IR, the host code or the device code it generates.
//!
//! The corpus: every `#[kernel]` fn and `#[kernel_module]` mod of `examples/src/*.rs` and
//! `tests/src/*.rs` (read from those sources) and of `kernel-macros/tests/codegen/in/*.rs`
//! (small kernels for the device paths; each says which it takes). They run through the macros'
//! own entry points (`expand_kernel_fn`, `module::expand`, as `lib.rs` calls them), with
//! `kernel::record` collecting what each kernel lowered. For each kernel, under
//! `tests/codegen/out/<source>/<kernel>/`:
//!
//! - `kernel.ir`: the block IR of every function-meta variant (`ir::Kernel`'s `Display`, as
//!   `KERNEL_DUMP` writes it);
//! - `host.rs` (not for the corpus of `in/`): the host module (`Meta`, `CONFIGS`, `INFO` with
//!   every instance's shared memory, tensor maps and split size, `launch`, the CPU backend's
//!   functions);
//! - `<instance>.sm_80.device.rs` and `<instance>.sm_90a.device.rs`: an instance's device entry
//!   as `cargo xtask build-ptx` compiles it for each architecture (the `#[cfg(target_feature)]`s
//!   of its bodies evaluated: sm_80 stands for every target but sm_90a), or one
//!   `<instance>.device.rs` when both are the same; `<instance>__split.*` for the entry of split
//!   launches. `POLICIES` limits what is written for a few kernels.
//!
//! Rust is formatted by `prettyplease`, then indented by 2 spaces per level instead of 4 (the
//! generated code nests deeply: 4-space indentation would be over half of the bytes).
//!
//! - `<instance>.sm_80.plan` and `<instance>.sm_90a.plan` (or one `<instance>.plan` for an entry
//!   with one body): the device plan of each body of the entries written (`DevicePlan`'s
//!   `Display`, as `KERNEL_DUMP` writes it).
//!
//! `KERNEL_BLESS=1 cargo test -p kernel-macros snapshots` (`./x bless`) rewrites the files and
//! removes those no kernel produces any more; without it, a difference, a missing or a stale file
//! fails the test, which prints the start of each diff.

use crate::kernel::{record, Lowered};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const BLESS: &str = "KERNEL_BLESS=1 cargo test -p kernel-macros snapshots (or ./x bless)";

/// The architectures whose device code is snapshotted: `mma.sync` bodies (every target but
/// sm_90a) and the `wgmma` bodies (sm_90a).
const TARGETS: [&str; 2] = ["sm_80", "sm_90a"];

/// What is written of a kernel's device code.
struct Policy {
    /// The instances written, as (config, variant) pairs; `None`: all of them.
    instances: Option<&'static [(usize, usize)]>,
    /// Whether the split entry of the first instance written is written too.
    split: bool,
    /// Whether the bodies for targets other than sm_90a are written.
    sm_80: bool,
}

/// Every instance, both targets, no split entry (a split entry differs from its plain entry in
/// the same places in every kernel: writing them all would double the snapshots).
const DEFAULT: Policy = Policy { instances: None, split: false, sm_80: true };

/// The kernels (by name) written otherwise than by `DEFAULT`. The examples' matmul: its device
/// code is 0.7 to 3.6 MB per instance (pretty-printed; 45 instances), so only config 6 without
/// activation (64x32x32 on 2 warps, the smallest: the `mma.sync` K loop, one body for every
/// target) and config 0 with swish (a 128x256 accumulator with an epilogue of exponentials and
/// divisions, run as loops over slots); the corpus covers the other paths with small tiles. The
/// bf16 linear layer: its sm_90a bodies of config 1 with `gelu` (`erf`) and config 0 with
/// `gelu_tanh` (128x256 on `wgmma`), whose epilogues run as loops over slots. The
/// corpus's Hopper kernels: their sm_80 bodies are the `mma.sync` paths of `k_loops.rs` and
/// `tensor_cores.rs` again. The quantized matmuls: their smaller config (the paths of the
/// `eight_bit` test kernels on a larger tile).
const POLICIES: &[(&str, Policy)] = &[
    ("matmul_kernel", Policy { instances: Some(&[(6, 0), (0, 2)]), ..DEFAULT }),
    ("linear_kernel", Policy { instances: Some(&[(1, 1), (0, 2)]), sm_80: false, ..DEFAULT }),
    ("matmul_fp8_kernel", Policy { instances: Some(&[(1, 0)]), ..DEFAULT }),
    ("matmul_i8_kernel", Policy { instances: Some(&[(1, 0)]), ..DEFAULT }),
    ("hopper_k_loop", Policy { split: true, sm_80: false, ..DEFAULT }),
    ("split_k", Policy { split: true, ..DEFAULT }),
    ("hopper_reader_barriers", Policy { sm_80: false, ..DEFAULT }),
    ("tma_strides", Policy { sm_80: false, ..DEFAULT }),
    ("tma_nested_ptrs", Policy { sm_80: false, ..DEFAULT }),
    ("ahead_nested_ptrs", Policy { sm_80: false, ..DEFAULT }),
    ("wgmma", Policy { sm_80: false, ..DEFAULT }),
    ("wgmma_n192", Policy { sm_80: false, ..DEFAULT }),
];

fn policy(kernel: &str) -> &'static Policy {
    POLICIES.iter().find(|(k, _)| *k == kernel).map_or(&DEFAULT, |(_, p)| p)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("kernel-macros lies in the workspace").to_path_buf()
}

fn codegen_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/codegen")
}

/// A source file of the corpus and the directory under `out/` its kernels' snapshots go to.
struct Source {
    path: PathBuf,
    out: String,
    /// Whether the file must have a kernel (the examples' `lib.rs` has none).
    has_kernels: bool,
    /// Whether its kernels' host modules are written.
    host: bool,
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
}

fn stem(p: &Path) -> String {
    p.file_stem().expect("a file name").to_string_lossy().into_owned()
}

/// The examples (`examples/src/*.rs`), the kernels of the GPU test suite
/// (`tests/src/*.rs` but `lib.rs`, `host.rs` and `guide.rs`, the guide's doctests) and the corpus (`kernel-macros/tests/codegen/in/*.rs`, whose host
/// modules are not written: its kernels are there for their device code, and the launchers and
/// CPU functions of the others cover the host side).
fn sources() -> Vec<Source> {
    let examples = rust_files(&repo().join("examples/src")).into_iter().map(|path| Source { out: format!("examples/{}", stem(&path)), path, has_kernels: false, host: true });
    let tests = rust_files(&repo().join("tests/src"))
        .into_iter()
        .filter(|path| !matches!(stem(path).as_str(), "lib" | "host" | "guide"))
        .map(|path| Source { out: format!("tests/{}", stem(&path)), path, has_kernels: true, host: true });
    let corpus = rust_files(&codegen_dir().join("in")).into_iter().map(|path| {
        let out = stem(&path);
        assert!(out != "examples" && out != "tests", "`in/{out}.rs` would share `out/{out}/` with other snapshots: rename it");
        Source { out, path, has_kernels: true, host: false }
    });
    examples.chain(tests).chain(corpus).collect()
}

/// Takes the first attribute named `name` off `attrs`: its arguments, as the attribute macro
/// receives them.
fn take_attr(attrs: &mut Vec<syn::Attribute>, name: &str) -> Option<TokenStream> {
    let pos = attrs.iter().position(|a| crate::kernel::is_attr(a, name))?;
    Some(match attrs.remove(pos).meta {
        syn::Meta::List(l) => l.tokens,
        _ => TokenStream::new(),
    })
}

/// Expands every top-level `#[kernel]` fn and `#[kernel_module]` mod of `src` the way the
/// proc-macro shims in `lib.rs` do: the expansions and what each kernel lowered.
fn expand_source(src: &str, name: &str) -> (TokenStream, Vec<Lowered>) {
    let file = syn::parse_file(src).unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
    let mut tokens = TokenStream::new();
    let mut lowered = Vec::new();
    for item in file.items {
        let (out, l) = match item {
            syn::Item::Fn(mut f) => match take_attr(&mut f.attrs, "kernel") {
                Some(a) => record(|| crate::expand_kernel_fn(a, f)),
                None => continue,
            },
            syn::Item::Mod(mut m) => match take_attr(&mut m.attrs, "kernel_module") {
                Some(a) => record(|| crate::module::expand(a, m)),
                None => continue,
            },
            _ => continue,
        };
        assert!(!contains_ident(&out, "compile_error"), "a kernel of {name} has errors: {out}");
        tokens.extend(out);
        lowered.extend(l);
    }
    (tokens, lowered)
}

fn contains_ident(ts: &TokenStream, name: &str) -> bool {
    ts.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => contains_ident(&g.stream(), name),
        _ => false,
    })
}

/// The items of a token stream, split where an item ends: at a `;` or a `{ .. }` group at its
/// top level (what the device modules hold: functions, statics, `macro_rules!`). Parsing the
/// whole expansion with syn would take seconds (the matmul's is megabytes); only the items
/// written are parsed.
fn split_items(ts: TokenStream) -> Vec<TokenStream> {
    let mut items = Vec::new();
    let mut cur = TokenStream::new();
    for t in ts {
        let end = match &t {
            TokenTree::Punct(p) => p.as_char() == ';',
            TokenTree::Group(g) => g.delimiter() == Delimiter::Brace,
            _ => false,
        };
        cur.extend([t]);
        if end {
            items.push(std::mem::take(&mut cur));
        }
    }
    assert!(cur.is_empty(), "a device module ends in the middle of an item: {cur}");
    items
}

/// The generated `mod <kernel>` items in `ts` (inside `#[kernel_module]`s too), with their
/// attributes and visibility: the host module (`cfg(not(target_arch = "nvptx64"))`) and the
/// device one (`cfg(target_arch = "nvptx64")`).
fn kernel_modules(ts: TokenStream, kernel: &str, host: &mut Option<TokenStream>, device: &mut Option<TokenStream>) {
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    // Where the current item's attributes and visibility start.
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        let TokenTree::Group(g) = t else {
            if matches!(t, TokenTree::Punct(p) if p.as_char() == ';') {
                start = i + 1;
            }
            continue;
        };
        if g.delimiter() != Delimiter::Brace {
            continue;
        }
        let is_module = i >= 2 && matches!((&tokens[i - 2], &tokens[i - 1]), (TokenTree::Ident(m), TokenTree::Ident(n)) if m == "mod" && n == kernel);
        let item_start = std::mem::replace(&mut start, i + 1);
        if !is_module {
            kernel_modules(g.stream(), kernel, host, device);
            continue;
        }
        // The attributes and the visibility.
        let head: TokenStream = tokens[item_start..i - 2].iter().cloned().collect();
        let head = head.to_string();
        if head.contains("# [cfg (not (target_arch = \"nvptx64\"))]") {
            *host = Some(tokens[item_start..=i].iter().cloned().collect());
        } else if head.contains("# [cfg (target_arch = \"nvptx64\")]") {
            *device = Some(g.stream());
        }
    }
}

/// Whether the `#[cfg(..)]` attributes of an item of device code hold for `target` (the device
/// backend emits `target_feature = "sm_90a"` and the kernel filter `kernel_only`, unset in a
/// build of every kernel, under `not`, `all`, `any`).
fn cfg_holds(attrs: &[syn::Attribute], target: &str) -> bool {
    fn eval(m: &syn::Meta, target: &str) -> bool {
        match m {
            syn::Meta::Path(p) if p.is_ident("kernel_only") => false,
            syn::Meta::NameValue(nv) if nv.path.is_ident("kernel_only") => false,
            syn::Meta::NameValue(nv) if nv.path.is_ident("target_feature") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => s.value() == target,
                other => panic!("unexpected cfg value in device code: {}", other.to_token_stream()),
            },
            syn::Meta::List(l) => {
                let args = l.parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated).expect("cfg arguments");
                let name = l.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                match name.as_str() {
                    "not" => !eval(&args[0], target),
                    "all" => args.iter().all(|a| eval(a, target)),
                    "any" => args.iter().any(|a| eval(a, target)),
                    _ => panic!("unexpected cfg in device code: {}: teach `cfg_holds` about it", m.to_token_stream()),
                }
            }
            _ => panic!("unexpected cfg in device code: {}: teach `cfg_holds` about it", m.to_token_stream()),
        }
    }
    attrs.iter().filter(|a| a.path().is_ident("cfg")).all(|a| match &a.meta {
        syn::Meta::List(l) => eval(&l.parse_args::<syn::Meta>().expect("a cfg predicate"), target),
        other => panic!("unexpected cfg in device code: {}", other.to_token_stream()),
    })
}

/// The entry an item of a device module belongs to: the name after `fn`, `static` or
/// `macro_rules!`, without the prefix of a manifest record (`__KERNEL_META_<entry>`) or of a
/// name claim (`__device_entry_<entry>`). A split launch's entry, `<entry>__split`, is an entry
/// of its own.
fn item_entry(item: &TokenStream) -> String {
    let tokens: Vec<TokenTree> = item.clone().into_iter().collect();
    let at = tokens.iter().position(|t| matches!(t, TokenTree::Ident(i) if i == "fn" || i == "static" || i == "macro_rules"));
    let name = at.and_then(|at| tokens[at + 1..].iter().find_map(|t| match t {
        TokenTree::Ident(i) => Some(i.to_string()),
        _ => None,
    }));
    let name = name.unwrap_or_else(|| panic!("an unexpected item in a device module: {item}"));
    let name = name.strip_prefix("__KERNEL_META_").or_else(|| name.strip_prefix("__device_entry_")).unwrap_or(&name).to_string();
    name.strip_prefix("r#").map(str::to_string).unwrap_or(name)
}

/// `items` formatted by prettyplease, indented by 2 spaces per level instead of 4. (Only
/// indentation changes: the generated code has no string literal that spans lines.)
fn pretty(items: Vec<syn::Item>) -> String {
    let text = prettyplease::unparse(&syn::File { shebang: None, attrs: vec![], items });
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let code = line.trim_start_matches(' ');
        out.extend(std::iter::repeat_n(' ', (line.len() - code.len()).div_ceil(2)));
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The snapshot files of one kernel, by path under `out/`.
fn kernel_snapshots(src: &Source, expansion: &TokenStream, l: &Lowered, files: &mut BTreeMap<PathBuf, String>) {
    let name = &l.name;
    let dir = PathBuf::from(&src.out).join(name);
    let origin = format!("{}", src.path.strip_prefix(repo()).unwrap_or(&src.path).display());
    let ir: Vec<String> = l.variants.iter().map(|v| v.to_string()).collect();
    files.insert(dir.join("kernel.ir"), ir.join("\n"));

    let (mut host, mut device) = (None, None);
    kernel_modules(expansion.clone(), name, &mut host, &mut device);
    let host = host.unwrap_or_else(|| panic!("no host module `{name}` in the expansion of {origin}"));
    let device = device.unwrap_or_else(|| panic!("no device module `{name}` in the expansion of {origin}"));
    if src.host {
        let host: syn::Item = syn::parse2(host).expect("the host module parses");
        let header = format!("// Generated by `#[kernel]` from {origin}: the host module.\n// Snapshot: {BLESS}.\n\n");
        files.insert(dir.join("host.rs"), header + &pretty(vec![host]));
    }

    // The device entries written (see `Policy`).
    let policy = policy(name);
    let chosen: Vec<&str> = l.instances.iter().filter(|i| policy.instances.is_none_or(|p| p.contains(&(i.config, i.variant)))).map(|i| i.entry.as_str()).collect();
    assert!(!chosen.is_empty(), "`POLICIES` selects no instance of `{name}`");
    let mut by_entry: BTreeMap<String, Vec<syn::Item>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut split_written = false;
    for item in split_items(device) {
        let entry = item_entry(&item);
        let base = entry.strip_suffix("__split").unwrap_or(&entry);
        if !chosen.contains(&base) {
            continue;
        }
        if entry != base && !by_entry.contains_key(&entry) {
            if split_written || !policy.split {
                continue;
            }
            split_written = true;
        }
        if !by_entry.contains_key(&entry) {
            order.push(entry.clone());
        }
        by_entry.entry(entry).or_default().push(syn::parse2(item).expect("a device item parses"));
    }
    let left_out = l.instances.len() - chosen.len();
    for entry in order {
        let items = &by_entry[&entry];
        let per_target: Vec<String> = TARGETS.iter().map(|t| pretty(items.iter().filter(|i| cfg_holds(attrs_of(i), t)).cloned().collect())).collect();
        let same = per_target.iter().all(|t| *t == per_target[0]);
        let other_body = !per_target[0].is_empty();
        let header = |what: &str| {
            let mut h = format!("// Generated by `#[kernel]` from {origin}: the device entry `{entry}` for {what}.");
            if left_out > 0 {
                h += &format!("\n// ({left_out} of the kernel's {} instances are not written here.)", l.instances.len());
            }
            if !same && !policy.sm_80 && other_body {
                h += "\n// (Its body for the other targets is not written here.)";
            }
            format!("{h}\n// Snapshot: {BLESS}.\n\n")
        };
        let short = entry.strip_prefix(&format!("{name}__")).unwrap_or("entry");
        let plans: Vec<&(String, String)> = l.instances.iter().flat_map(|i| &i.plans).filter(|(n, _)| n.rsplit_once('.').is_some_and(|(e, _)| e == entry)).collect();
        assert!(!plans.is_empty(), "no device plan of entry `{entry}`");
        for (plan_name, plan) in &plans {
            let target = plan_name.rsplit_once('.').map_or("", |(_, t)| t);
            if target != "sm_90a" && !policy.sm_80 && plans.len() > 1 {
                continue;
            }
            let file = if plans.len() == 1 { format!("{short}.plan") } else { format!("{short}.{target}.plan") };
            files.insert(dir.join(file), format!("// The device plan of `{entry}` ({origin}). Snapshot: {BLESS}.\n\n{plan}"));
        }
        if same {
            files.insert(dir.join(format!("{short}.device.rs")), header("every target") + &per_target[0]);
            continue;
        }
        for (t, code) in TARGETS.iter().zip(per_target) {
            // A split entry of an instance with a Hopper body exists for sm_90a only.
            if code.is_empty() || (*t != "sm_90a" && !policy.sm_80) {
                continue;
            }
            let what = if *t == "sm_90a" { "sm_90a" } else { "every target but sm_90a" };
            files.insert(dir.join(format!("{short}.{t}.device.rs")), header(what) + &code);
        }
    }
}

fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Static(s) => &s.attrs,
        syn::Item::Macro(m) => &m.attrs,
        other => panic!("an unexpected item in a device module: {}", other.to_token_stream()),
    }
}

/// The snapshots of one source file, by path under `out/`, and its kernels' names.
fn source_snapshots(src: &Source) -> (BTreeMap<PathBuf, String>, Vec<String>) {
    let text = std::fs::read_to_string(&src.path).unwrap_or_else(|e| panic!("reading {}: {e}", src.path.display()));
    let (expansion, lowered) = expand_source(&text, &src.path.display().to_string());
    assert!(!src.has_kernels || !lowered.is_empty(), "{} has no kernel", src.path.display());
    let mut files = BTreeMap::new();
    for l in &lowered {
        kernel_snapshots(src, &expansion, l, &mut files);
    }
    (files, lowered.into_iter().map(|l| l.name).collect())
}

/// Every snapshot of the corpus, by path under `out/`: one thread per source file (the
/// examples' matmul, 45 instances, takes most of the time). The generated code nests deeply:
/// the macro runs on rustc's large stack, these threads get one too.
fn generate() -> BTreeMap<PathBuf, String> {
    let sources = sources();
    let mut files = BTreeMap::new();
    let mut kernels = Vec::new();
    std::thread::scope(|s| {
        let threads: Vec<_> = sources
            .iter()
            .map(|src| std::thread::Builder::new().stack_size(256 << 20).spawn_scoped(s, || source_snapshots(src)).expect("a thread"))
            .collect();
        for t in threads {
            let (out, names) = t.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            kernels.extend(names);
            for (path, text) in out {
                assert!(!files.contains_key(&path), "two kernels write {}: rename one", path.display());
                files.insert(path, text);
            }
        }
    });
    for (k, _) in POLICIES {
        assert!(kernels.iter().any(|n| n == k), "`POLICIES` names `{k}`, which no source of the corpus has");
    }
    for text in files.values_mut() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    files
}

/// Every file under `dir`, as paths relative to `base`.
fn files_under(dir: &Path, base: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            files_under(&p, base, out);
        } else {
            out.push(p.strip_prefix(base).expect("under the base").to_path_buf());
        }
    }
}

/// Where `old` and `new` first differ: the differing lines between their common start and end
/// (at most 30 of each), with 3 lines of context, `-` old and `+` new.
fn diff_excerpt(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..].iter().rev().zip(b[pre..].iter().rev()).take_while(|(x, y)| x == y).count();
    let mut out = format!("@@ line {} (old {} lines, new {} lines) @@\n", pre + 1, a.len(), b.len());
    for l in &a[pre.saturating_sub(3)..pre] {
        out += &format!(" {l}\n");
    }
    let show = |lines: &[&str], sign: char, out: &mut String| {
        for l in lines.iter().take(30) {
            *out += &format!("{sign}{l}\n");
        }
        if lines.len() > 30 {
            *out += &format!("{sign}... ({} more lines)\n", lines.len() - 30);
        }
    };
    show(&a[pre..a.len() - suf], '-', &mut out);
    show(&b[pre..b.len() - suf], '+', &mut out);
    for l in b[b.len() - suf..].iter().take(3) {
        out += &format!(" {l}\n");
    }
    out
}

#[test]
fn codegen_snapshots() {
    let files = generate();
    let out_dir = codegen_dir().join("out");
    let mut existing = Vec::new();
    files_under(&out_dir, &out_dir, &mut existing);
    existing.sort();
    let stale: Vec<&PathBuf> = existing.iter().filter(|p| !files.contains_key(*p)).collect();

    if std::env::var_os("KERNEL_BLESS").is_some_and(|v| !v.is_empty() && v != "0") {
        let mut written = 0;
        for (path, text) in &files {
            let full = out_dir.join(path);
            if std::fs::read_to_string(&full).ok().as_deref() != Some(text.as_str()) {
                std::fs::create_dir_all(full.parent().unwrap()).expect("creating the snapshot directory");
                std::fs::write(&full, text).unwrap_or_else(|e| panic!("writing {}: {e}", full.display()));
                written += 1;
            }
        }
        for path in &stale {
            std::fs::remove_file(out_dir.join(path)).expect("removing a stale snapshot");
            // Directories left empty go too (`remove_dir` fails on others).
            let mut dir = out_dir.join(path).parent().map(Path::to_path_buf);
            while let Some(d) = dir.filter(|d| *d != out_dir) {
                if std::fs::remove_dir(&d).is_err() {
                    break;
                }
                dir = d.parent().map(Path::to_path_buf);
            }
        }
        eprintln!("snapshots: {} files, {written} written, {} removed", files.len(), stale.len());
        return;
    }

    let mut failures = Vec::new();
    for (path, text) in &files {
        match std::fs::read_to_string(out_dir.join(path)) {
            Ok(old) if old == *text => {}
            Ok(old) => failures.push(format!("{} differs:\n{}", path.display(), diff_excerpt(&old, text))),
            Err(_) => failures.push(format!("{} is missing (a new kernel or a new file kind)", path.display())),
        }
    }
    failures.extend(stale.iter().map(|p| format!("{} is stale: no kernel of the corpus produces it any more", p.display())));
    if !failures.is_empty() {
        let shown = failures.iter().take(8).cloned().collect::<Vec<_>>().join("\n");
        let more = failures.len().saturating_sub(8);
        panic!(
            "{} of {} code generator snapshots under {} changed:\n\n{shown}\n{}\nIf the change is intended, rewrite them with\n    {BLESS}\nand review the diff (`git diff kernel-macros/tests/codegen/out`).",
            failures.len(),
            files.len(),
            out_dir.display(),
            if more > 0 { format!("... and {more} more\n") } else { String::new() },
        );
    }
}
