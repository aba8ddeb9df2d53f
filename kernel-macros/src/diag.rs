//! Diagnostics: every error of a kernel is collected and reported at once, each spanning the
//! whole offending expression; warnings (`static_print`) are collected the same way.

use proc_macro2::{Punct, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::HashSet;

/// A source range: the first and last token of a construct. On stable Rust a proc macro
/// cannot join spans, but an error spanned by two tokens underlines everything between them.
#[derive(Clone, Copy, Debug)]
pub struct Sp {
    pub start: Span,
    pub end: Span,
}

impl From<Span> for Sp {
    fn from(s: Span) -> Sp {
        Sp { start: s, end: s }
    }
}

/// `.sp()`: the range of any syntax node.
pub trait SpanRange {
    fn sp(&self) -> Sp;
}

impl<T: ToTokens> SpanRange for T {
    fn sp(&self) -> Sp {
        let mut tokens = self.to_token_stream().into_iter();
        let Some(first) = tokens.next() else {
            return Span::call_site().into();
        };
        let last = tokens.last().unwrap_or_else(|| first.clone());
        Sp { start: first.span(), end: last.span() }
    }
}

impl Sp {
    pub fn to(self, end: Sp) -> Sp {
        Sp { start: self.start, end: end.end }
    }

    fn error(self, msg: &str) -> syn::Error {
        let mut a = Punct::new('#', Spacing::Alone);
        a.set_span(self.start);
        let mut b = Punct::new('#', Spacing::Alone);
        b.set_span(self.end);
        let ts: TokenStream = [TokenTree::Punct(a), TokenTree::Punct(b)].into_iter().collect();
        syn::Error::new_spanned(ts, msg)
    }
}

#[derive(Default)]
pub struct Diagnostics {
    errors: Vec<syn::Error>,
    seen: HashSet<String>,
    /// Warnings: where, the name of the deprecated item that carries them, and the text.
    warnings: Vec<(Span, String, String)>,
}

impl Diagnostics {
    /// Records an error over `sp` (duplicates from several variants are dropped).
    pub fn error(&mut self, sp: impl Into<Sp>, msg: impl Into<String>) {
        let sp = sp.into();
        let msg = msg.into();
        let key = format!("{:?}|{:?}|{}", sp.start, sp.end, msg);
        if self.seen.insert(key) {
            self.errors.push(sp.error(&msg));
        }
    }

    pub fn push(&mut self, e: syn::Error) {
        for one in e {
            let key = format!("{:?}|{}", one.span(), one);
            if self.seen.insert(key) {
                self.errors.push(one);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.errors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors.iter().map(|e| e.to_compile_error()).collect()
    }

    /// Records a warning at `sp` (duplicates from several variants are dropped); `label` names
    /// the item rustc's message mentions (`use of deprecated unit struct `_::<label>``).
    pub fn warning(&mut self, sp: impl Into<Sp>, label: &str, msg: impl Into<String>) {
        let sp = sp.into();
        let msg = msg.into();
        let key = format!("warning|{:?}|{}", sp.start, msg);
        if self.seen.insert(key) {
            self.warnings.push((sp.start, label.to_string(), msg));
        }
    }

    /// The warnings as code: a proc macro cannot emit warnings on stable Rust, so each is the
    /// use of a deprecated item whose note is the message, spanned at the warning's place
    /// (rustc reports "use of deprecated unit struct `_::<label>`: <message>"; `allow(deprecated)`
    /// silences it).
    pub fn to_warnings(&self) -> TokenStream {
        self.warnings
            .iter()
            .map(|(span, label, msg)| {
                let marker = proc_macro2::Ident::new(label, *span);
                let decl = proc_macro2::Ident::new(label, Span::call_site());
                quote::quote_spanned! {*span=>
                    const _: () = {
                        #[deprecated(note = #msg)]
                        #[allow(non_camel_case_types)]
                        struct #decl;
                        #[allow(dead_code)]
                        fn warn() {
                            let _ = #marker;
                        }
                    };
                }
            })
            .collect()
    }
}
