//! Diagnostics: every error of a kernel is collected and reported at once.

use proc_macro2::{Span, TokenStream};
use std::collections::HashSet;

#[derive(Default)]
pub struct Diagnostics {
    errors: Vec<syn::Error>,
    seen: HashSet<String>,
}

impl Diagnostics {
    /// Records an error at `span` (duplicates from several variants are dropped).
    pub fn error(&mut self, span: Span, msg: impl Into<String>) {
        let msg = msg.into();
        let key = format!("{:?}|{}", span, msg);
        if self.seen.insert(key) {
            self.errors.push(syn::Error::new(span, msg));
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

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn to_compile_errors(&self) -> TokenStream {
        self.errors.iter().map(|e| e.to_compile_error()).collect()
    }
}
