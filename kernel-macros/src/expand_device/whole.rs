//! Chunk tests stated once for a whole one-dimensional block. A split phase
//! ([`DevGen::split_phase`]) runs its fast copy when every chunk of every access passes its test
//! (contiguous, 4-byte aligned and inside its buffer, or masked out entirely). For a pointer
//! block that steps by one element along the block, with no mask or a mask that keeps a prefix
//! of the block (`a < b`, `a` increasing by one along it, `b` constant), those tests hold for
//! every chunk when they hold for the range of elements the mask keeps, rounded up to whole
//! chunks: a test of the two ends of that range, the same for every thread, instead of a loop
//! over the thread's chunks (where it fails, the checked copy runs, as when a chunk fails).

use super::chunks::Along;
use super::*;

/// The two sides of a prefix mask and whether it keeps the element where they are equal (see
/// [`DevGen::prefix_bounds`]).
type PrefixBounds = (ExprId, ExprId, bool);

/// A split phase's test, in two parts: tests of the whole block (`whole`, the same in every
/// thread) and tests of the chunk at `__f0` (`per_chunk`, run for each chunk of the thread);
/// and, when every access is tested for the whole block, the test that its chunks are also all
/// aligned to their size and each kept or masked out whole (`clean`, see [`WholeTest`]).
pub(super) struct SplitTest {
    pub(super) whole: Vec<TokenStream>,
    pub(super) per_chunk: Vec<TokenStream>,
    pub(super) clean: Option<Vec<TokenStream>>,
}

/// A test of a whole block ([`DevGen::whole_block_test`]), and `clean`: whether, beyond it, the
/// first pointer is aligned to a chunk's size (so every chunk is, for one vector access with no
/// 4-byte pieces) and the kept prefix is a whole number of chunks (so no chunk straddles the
/// mask's edge: the element code need not apply the mask).
pub(super) struct WholeTest {
    pub(super) test: TokenStream,
    /// `None` where the analysis of multiples ([`super::multiples`]) proves it: the prefix a
    /// multiple of the chunk and the first pointer aligned to it.
    pub(super) clean: Option<TokenStream>,
    /// The loop whose body reads `test` and `clean` as flags computed before it
    /// (`whole_loop.rs`), if any.
    pub(super) looped: Option<LocalId>,
}

impl DevGen<'_> {
    /// The test of the whole block of `numel` elements for the access `parent` (a `load`, or a
    /// store's pointer block) through pointer block `ptr` with `mask`, in chunks of `v` elements
    /// of `size` bytes; `None` when the analysis cannot state it (the caller tests chunk by
    /// chunk). With `e` the length of the prefix the mask keeps (`numel` without a mask) and
    /// `eu` that rounded up to whole chunks (at most `numel`): every chunk that is not masked
    /// out entirely lies in `[0, eu)`, so the chunks pass when `eu` is 0 or the pointers over
    /// that range step by one element (the increment is one and the last pointer is where the
    /// first one's run ends: no offset wrapped), the first is 4-byte aligned (the chunks start
    /// a multiple of 4 bytes apart) and the range is inside the buffer.
    pub(super) fn whole_block_test(&mut self, parent: ExprId, ptr: ExprId, mask: Option<ExprId>, numel: usize, v: usize, size: usize) -> Option<WholeTest> {
        if self.shapes[parent].len() != 1 || self.shapes[parent][0] != numel || numel % v != 0 {
            return None;
        }
        let moves = self.child_moves(parent, ptr, true);
        let at0 = self.sub_at(parent, ptr, &At::Flat(quote!(0usize)));
        let step = self.col_step(ptr, moves, &at0)?;
        let bounds = match mask {
            None => None,
            Some(m) => Some(self.prefix_bounds(parent, m)?),
        };
        if let Some(t) = self.whole_loop_test(parent, ptr, bounds, (numel, v, size), &step) {
            return Some(t);
        }
        let (prefix, prefix_multiple) = match bounds {
            None => (quote!(#numel), numel as u64),
            Some(b) => {
                let span = numel as i64 - 1;
                (self.prefix_kept(parent, b, (quote!(#numel), quote!(#span))), self.prefix_multiple(b))
            }
        };
        let p0 = self.operand(parent, ptr, &At::Flat(quote!(0usize)));
        let checks = self.range_checks(parent, ptr, &step, size);
        // Alignment the analysis of multiples proves is not tested.
        let p0_multiple = self.multiples.at0(ptr);
        let chunk_align = (v * size).min(16);
        let clean_prefix = (prefix_multiple % v as u64 != 0).then(|| quote!((#prefix) % #v == 0));
        let clean_p0 = (p0_multiple % chunk_align as u64 != 0).then(|| quote!(((#p0) as usize) % #chunk_align == 0));
        let clean = match (clean_prefix, clean_p0) {
            (Some(a), Some(b)) => Some(quote!((#a && #b))),
            (a, b) => a.or(b).map(|t| quote!((#t))),
        };
        let test = quote!({
            let __e: usize = #prefix;
            let __eu: usize = ::core::cmp::min((__e + (#v - 1)) / #v * #v, #numel);
            __eu == 0 || {
                let __p0 = #p0;
                #checks
            }
        });
        Some(WholeTest { test, clean, looped: None })
    }

    /// A power of two that the length of the prefix kept by a mask with `bounds` (see
    /// [`Self::prefix_bounds`]) is a multiple of: `b - a` at element 0, clamped to the block's
    /// length (a multiple of the chunk), when the comparison is strict.
    fn prefix_multiple(&self, (a, b, inclusive): PrefixBounds) -> u64 {
        if inclusive {
            1
        } else {
            self.multiples.at0(a).min(self.multiples.at0(b))
        }
    }

    /// For a mask `m` of the one-dimensional block `parent` that keeps a prefix of it, `(a, b,
    /// inclusive)`: `m` is (through pure locals) `a < b`, `a <= b`, `b > a` or `b >= a`, with `a`
    /// a signed integer block increasing by one along the block and `b` constant along it.
    fn prefix_bounds(&self, parent: ExprId, m: ExprId) -> Option<PrefixBounds> {
        let k = self.k;
        let m = self.through_pure(m);
        let ExprKind::Binary(op, x, y) = k.exprs[m].kind else { return None };
        let (a, b, inclusive) = match op {
            BinOp::Lt => (x, y, false),
            BinOp::Le => (x, y, true),
            BinOp::Gt => (y, x, false),
            BinOp::Ge => (y, x, true),
            _ => return None,
        };
        let dtype = k.exprs[a].ty.dtype();
        let along = |c: ExprId| self.along(c, self.child_moves(parent, c, true));
        if along(a) != Along::Inc1 || along(b) != Along::Const || !matches!(dtype, Some(DType::I32 | DType::I64)) || k.exprs[b].ty.dtype() != dtype {
            return None;
        }
        Some((a, b, inclusive))
    }

    /// For a mask of a one-dimensional block of `len` elements (`span` = `len - 1` as an `i64`;
    /// both tokens) that keeps a prefix of it (`bounds`, see [`Self::prefix_bounds`]; evaluated
    /// at element 0 of `parent`), an expression of that prefix's length (a `usize` in
    /// `0..=len`): where `a` is below `b` (or not above). Should `a` pass its type's maximum over
    /// the block (it wraps, and the kept elements need not be a prefix) the length is `len`: the
    /// caller then tests the whole block.
    pub(super) fn prefix_kept(&mut self, parent: ExprId, (a, b, inclusive): PrefixBounds, (len, span): (TokenStream, TokenStream)) -> TokenStream {
        let max = match self.k.exprs[a].ty.dtype() {
            Some(DType::I32) => quote!(i32::MAX as i64),
            _ => quote!(i64::MAX),
        };
        let a0 = self.operand(parent, a, &At::Flat(quote!(0usize)));
        let b0 = self.operand(parent, b, &At::Flat(quote!(0usize)));
        let extra = inclusive as i64;
        quote!({
            let (__a0, __b0): (i64, i64) = ((#a0) as i64, (#b0) as i64);
            if __a0.checked_add(#span).is_none_or(|__z| __z > #max) {
                #len
            } else {
                __b0.saturating_sub(__a0).saturating_add(#extra).clamp(0, #len as i64) as usize
            }
        })
    }

    /// What makes the chunks of the kept range `[0, __eu)` of the access through `ptr` (first
    /// pointer bound to `__p0`, column step `step`, elements of `size` bytes) pass: they step by
    /// one element, the first is 4-byte aligned (unless the analysis of multiples proves it), the
    /// last pointer is where the first one's run ends (no offset wrapped), and the range is
    /// inside the buffer.
    pub(super) fn range_checks(&mut self, parent: ExprId, ptr: ExprId, step: &TokenStream, size: usize) -> TokenStream {
        let last = self.operand(parent, ptr, &At::Flat(quote!((__eu - 1))));
        let fits = self.fits_code_n(ptr, &quote!(__p0), quote!(__eu));
        let align = super::vector::pieces_align();
        let align_test = (self.multiples.at0(ptr) % super::vector::PIECES_ALIGN as u64 != 0).then(|| quote!(&& (__p0 as usize) % #align == 0));
        quote! {
            (#step) == 1i64
                #align_test
                && (#last as usize) == (__p0 as usize) + (__eu - 1) * #size
                && #fits
        }
    }

    /// `e` seen through the pure and inline locals that name it.
    fn through_pure(&self, e: ExprId) -> ExprId {
        match self.k.exprs[e].kind {
            ExprKind::Local(l) => match self.kinds[l] {
                LocalKind::Pure(v) | LocalKind::Inline(v) => self.through_pure(v),
                _ => e,
            },
            _ => e,
        }
    }
}
