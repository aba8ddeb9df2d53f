//! Bounds checks of global memory accesses on the GPU. Every entry receives, after its declared
//! parameters, the number of elements addressable from each pointer parameter (`__len_<name>`),
//! the address of the launch's fault record and a launch tag. Every access is checked against
//! the buffer of the pointer parameter it is computed from (or, for a pointer block computed
//! from several parameters, against all of their buffers): a chunk that does not fit takes the
//! element path, and an element that does not fit is skipped (a load gives its `other` value)
//! and recorded, with its kernel, parameter, source line and index, for the runtime to report
//! (inline, no call: see `kernel_std`'s `record_fault`).

use super::*;
use proc_macro2::Span;
use quote::quote_spanned;

impl DevGen<'_> {
    /// The base and length identifiers of the buffer behind `ptr`.
    fn extent(&self, ptr: ExprId) -> Option<(Ident, Ident, u32)> {
        let i = self.ptr_root(ptr)?;
        let name = &self.k.params[i].name;
        Some((param_ident(name), len_ident(name), i as u32))
    }

    /// Every pointer parameter's buffer as `(address, bytes)`, for pointer blocks computed from
    /// several parameters.
    fn all_buffers(&self) -> TokenStream {
        let bufs = self.k.params.iter().filter_map(|p| match p.kind {
            ParamKind::Ptr(dt) => {
                let (base, len, e) = (param_ident(&p.name), len_ident(&p.name), dev_dtype(dt));
                Some(quote!((#base as u64, #len.saturating_mul(::core::mem::size_of::<#e>() as u64))))
            }
            ParamKind::Scalar(_) => None,
        });
        quote!(&[#(#bufs),*])
    }

    /// `true` when the `n` elements from the pointer value `p` (of the block `ptr`) fit in their
    /// buffer; no record is written (a chunk test: the element path checks again).
    pub(super) fn fits_code(&self, ptr: ExprId, p: &TokenStream, n: usize) -> TokenStream {
        self.fits_code_n(ptr, p, quote!(#n))
    }

    /// [`Self::fits_code`] for `n` elements given by a `usize` expression.
    pub(super) fn fits_code_n(&self, ptr: ExprId, p: &TokenStream, n: TokenStream) -> TokenStream {
        let d = &self.p.d;
        match self.extent(ptr) {
            Some((base, len, _)) => quote!(#d::fits(#p, #base, #len, #n)),
            None => {
                let bufs = self.all_buffers();
                quote!(#d::fits_any(#p, #n, #bufs))
            }
        }
    }

    /// [`Self::fits_code`] with the buffer's base passed through `opaque_usize`, so that the
    /// per-chunk part of the test is recomputed in a K loop rather than hoisted into registers.
    pub(super) fn fits_code_opaque(&self, ptr: ExprId, p: &TokenStream, n: usize) -> TokenStream {
        let d = &self.p.d;
        match self.extent(ptr) {
            Some((base, len, _)) => quote!(#d::fits(#p, #d::opaque_usize(#base as usize) as *mut _, #len, #n)),
            None => self.fits_code(ptr, p, n),
        }
    }

    /// `true` when the element at the pointer value `p` (of the block `ptr`) is inside its
    /// buffer; else the access at `span` is recorded in the fault record and must be skipped.
    pub(super) fn in_bounds_code(&self, ptr: ExprId, p: &TokenStream, span: Span) -> TokenStream {
        let d = &self.p.d;
        match self.extent(ptr) {
            Some((base, len, idx)) => {
                let line = quote_spanned!(span=> ::core::line!());
                quote!(#d::in_bounds(#p, #base, #len, __fault, __tag, #idx, #line))
            }
            None => {
                let line = quote_spanned!(span=> ::core::line!());
                let bufs = self.all_buffers();
                quote!(#d::in_bounds_any(#p, #bufs, __fault, __tag, #line))
            }
        }
    }
}

impl DevGen<'_> {
    /// The element path of a chunk: `open` starts it, `elem` checks one element (pointer `a`,
    /// mask bit `m`) and binds `ok` (access it: masked in and inside the buffer), `close` records
    /// the first masked element outside its buffer (one record per chunk). Elements are
    /// checked one after the other, so only one address is live at a time.
    pub(super) fn chunk_check_open(&self, ptr: ExprId, elem: &TokenStream) -> TokenStream {
        match self.extent(ptr) {
            Some(_) => quote!(let mut __badp: *mut #elem = ::core::ptr::null_mut();),
            None => quote!(),
        }
    }

    pub(super) fn chunk_check_elem(&self, ptr: ExprId, a: &Ident, m: &TokenStream, ok: &Ident, span: Span) -> TokenStream {
        let d = &self.p.d;
        match self.extent(ptr) {
            Some((base, len, _)) => quote! {
                let #ok: bool = #m && #d::fits(#a, #base, #len, 1);
                if #m && !#ok && __badp.is_null() {
                    __badp = #a;
                }
            },
            None => {
                let line = quote_spanned!(span=> ::core::line!());
                let bufs = self.all_buffers();
                quote!(let #ok: bool = #m && #d::in_bounds_any(#a, #bufs, __fault, __tag, #line);)
            }
        }
    }

    pub(super) fn chunk_check_close(&self, ptr: ExprId, span: Span) -> TokenStream {
        let d = &self.p.d;
        match self.extent(ptr) {
            Some((base, len, idx)) => {
                let line = quote_spanned!(span=> ::core::line!());
                quote! {
                    if !__badp.is_null() {
                        #d::record_fault_at(__badp, #base, #len, __fault, __tag, #idx, #line);
                    }
                }
            }
            None => quote!(),
        }
    }

    /// The pointer parameter `e` is, if it is one (not an expression over one).
    pub(super) fn is_root_param(&self, e: ExprId) -> bool {
        matches!(self.k.exprs[e].kind, ExprKind::Param(i) if matches!(self.k.params[i].kind, ParamKind::Ptr(_)))
    }
}

/// The hidden length parameter of pointer parameter `name`.
pub(super) fn len_ident(name: &str) -> Ident {
    format_ident!("__len_{}", name.trim_start_matches("r#"))
}
