//! The oracle: runs the macros' entry points on one input, the way the proc-macro shims in
//! `lib.rs` call them, and classifies what happened (`Outcome`). A panic, or an expansion that
//! is neither valid Rust nor an error report, is a bug.

use crate::{kernel, module};
use proc_macro2::{TokenStream, TokenTree};
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::str::FromStr;

/// What one input did.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome {
    /// proc_macro2 or syn rejected the source (so would rustc or the macro shim).
    Rejected,
    /// Parsed, but there is no `#[kernel]` function or `#[kernel_module]` module to expand.
    NoEntry,
    /// Every entry point expanded; `errors`: one of them reported compile errors.
    Expanded { errors: bool },
    /// The lexer or syn itself panicked (not a bug of this crate, but reported).
    ParserPanic(String),
    /// The macro panicked.
    Panicked(String),
    /// The expansion is neither valid Rust nor an error report.
    InvalidOutput(String),
}

impl Outcome {
    pub(super) fn is_bug(&self) -> bool {
        matches!(self, Outcome::Panicked(_) | Outcome::InvalidOutput(_))
    }
}

thread_local! {
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// A panic hook that records (instead of printing) panics raised under `guarded` on this
/// thread; panics elsewhere go to the previous hook.
pub(super) fn install_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(|c| c.get()) {
                let p = info.payload();
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "<non-string panic payload>".to_string());
                let at = info.location().map(|l| format!("{}:{}", l.file(), l.line())).unwrap_or_default();
                LAST_PANIC.with(|l| *l.borrow_mut() = Some(format!("{msg} (at {at})")));
            } else {
                prev(info);
            }
        }));
    });
}

pub(super) fn guarded<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    CATCHING.with(|c| c.set(true));
    let r = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    r.map_err(|_| LAST_PANIC.with(|l| l.borrow_mut().take()).unwrap_or_else(|| "panic".to_string()))
}

pub(super) enum Entry {
    Kernel(TokenStream, syn::ItemFn),
    Module(TokenStream, syn::ItemMod),
}

/// The arguments of an attribute macro; `None` for `#[name = value]`, which rustc rejects.
pub(super) fn attr_args(a: syn::Attribute) -> Option<TokenStream> {
    match a.meta {
        syn::Meta::Path(_) => Some(TokenStream::new()),
        syn::Meta::List(l) => Some(l.tokens),
        syn::Meta::NameValue(_) => None,
    }
}

/// Takes the first attribute named `name` off `attrs`.
pub(super) fn take_attr(attrs: &mut Vec<syn::Attribute>, name: &str) -> Option<Option<TokenStream>> {
    let pos = attrs.iter().position(|a| kernel::is_attr(a, name))?;
    Some(attr_args(attrs.remove(pos)))
}

pub(super) fn contains_ident(ts: &TokenStream, name: &str) -> bool {
    ts.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == name,
        TokenTree::Group(g) => contains_ident(&g.stream(), name),
        _ => false,
    })
}

/// Expansions larger than this (in tokens) are not re-parsed: syn parses the device code of
/// a many-instance kernel (megabytes) in seconds. Small kernels exercise the same generators.
pub(super) const MAX_CHECKED_TOKENS: usize = 40_000;

thread_local! {
    /// Clean expansions too large to re-parse (see `MAX_CHECKED_TOKENS`).
    pub(super) static UNCHECKED: Cell<u64> = const { Cell::new(0) };
}

pub(super) fn count_tokens(ts: &TokenStream) -> usize {
    ts.clone()
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => 1 + count_tokens(&g.stream()),
            _ => 1,
        })
        .sum()
}

/// Runs the macro entry points on every top-level `#[kernel]` fn and `#[kernel_module]` mod
/// of `src`, the way the proc-macro shims in `lib.rs` call them.
pub(super) fn run_source(src: &str) -> Outcome {
    let parsed = guarded(|| TokenStream::from_str(src).ok().and_then(|ts| syn::parse2::<syn::File>(ts).ok()));
    let file = match parsed {
        Err(p) => return Outcome::ParserPanic(p),
        Ok(None) => return Outcome::Rejected,
        Ok(Some(f)) => f,
    };
    let mut entries = Vec::new();
    for item in file.items {
        match item {
            syn::Item::Fn(mut f) => {
                if let Some(Some(a)) = take_attr(&mut f.attrs, "kernel") {
                    entries.push(Entry::Kernel(a, f));
                }
            }
            syn::Item::Mod(mut m) => {
                if let Some(Some(a)) = take_attr(&mut m.attrs, "kernel_module") {
                    entries.push(Entry::Module(a, m));
                }
            }
            _ => {}
        }
    }
    if entries.is_empty() {
        return Outcome::NoEntry;
    }
    let mut errors = false;
    for e in entries {
        let out = guarded(move || match e {
            Entry::Kernel(a, f) => crate::expand_kernel_fn(a, f),
            Entry::Module(a, m) => module::expand(a, m),
        });
        let out = match out {
            Ok(o) => o,
            Err(p) => return Outcome::Panicked(p),
        };
        if contains_ident(&out, "compile_error") {
            errors = true;
        } else if count_tokens(&out) > MAX_CHECKED_TOKENS {
            UNCHECKED.with(|u| u.set(u.get() + 1));
        } else if let Err(e) = syn::parse2::<syn::File>(out) {
            return Outcome::InvalidOutput(format!("the expansion is not valid Rust and reports no error: {e}"));
        }
    }
    Outcome::Expanded { errors }
}

/// The messages of the `compile_error!`s the macros expand `src` to.
pub(super) fn error_messages(src: &str) -> Vec<String> {
    fn walk(ts: TokenStream, out: &mut Vec<String>) {
        let v: Vec<TokenTree> = ts.into_iter().collect();
        for (i, t) in v.iter().enumerate() {
            match t {
                TokenTree::Ident(id) if id == "compile_error" => {
                    if let Some(TokenTree::Group(g)) = v.get(i + 2) {
                        out.push(g.stream().to_string());
                    }
                }
                TokenTree::Group(g) => walk(g.stream(), out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    let Ok(mut file) = syn::parse_str::<syn::File>(src) else { return out };
    for item in std::mem::take(&mut file.items) {
        let expanded = match item {
            syn::Item::Fn(mut f) => match take_attr(&mut f.attrs, "kernel") {
                Some(Some(a)) => guarded(move || crate::expand_kernel_fn(a, f)),
                _ => continue,
            },
            syn::Item::Mod(mut m) => match take_attr(&mut m.attrs, "kernel_module") {
                Some(Some(a)) => guarded(move || module::expand(a, m)),
                _ => continue,
            },
            _ => continue,
        };
        match expanded {
            Ok(ts) => walk(ts, &mut out),
            Err(p) => out.push(format!("PANIC: {p}")),
        }
    }
    out
}

/// Whether this build panics on integer overflow (as the dev profile does).
pub(super) fn overflow_checks_on() -> bool {
    let x = std::hint::black_box(i32::MAX);
    guarded(|| std::hint::black_box(x + std::hint::black_box(1))).is_err()
}

/// Runs `f` on a thread with a large stack: syn and the lowering recurse on nesting depth.
pub(super) fn on_big_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new().stack_size(256 << 20).spawn(f).expect("spawn a fuzz thread").join().expect("fuzz thread")
}
