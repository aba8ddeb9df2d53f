//! The tensor-map version of a pipelined K loop (sm_90a): thread 0 copies each stage's operand
//! tiles with `cp.async.bulk.tensor.2d` into the swizzled staging that `wgmma` reads.
//!
//! An operand may have two maps, one per [`Staging`]: `Rows` when its memory is contiguous
//! along the block's rows (`offs[None, :]` has stride 1: the map's rows are the block's rows),
//! `Cols` when it is contiguous along the block's columns (a transposed view: the map's rows
//! are the block's columns, and the tile is staged transposed, which `wgmma` reads with the
//! other transpose bit). The launch builds the map whose unit-stride parameter is 1 (at most
//! one, unless both are); the entry picks each operand's staging from the maps' validity mask
//! (uniform over the block) and checks the operand's elements against that map's boxes. One
//! loop serves every combination of stagings: the copies, the fix-ups and the `wgmma` issue
//! (whose transpose bits are immediates) branch on those uniform conditions. (A loop per
//! combination made ptxas spill in the split entries of 128-register accumulators.)

use super::*;
use crate::expand_device::chunks::Along;
use crate::expand_device::plan::split::is_zero_bits;
use crate::expand_device::plan::LiveLines;

/// What the tensor-map code of one operand needs from the pipeline (see `gen_pipelined`).
pub(super) struct TmaCtx<'a> {
    pub(super) oi: usize,
    pub(super) op: &'a PipeOp,
    /// The operand's base as its scalar pointer and offsets blocks (`param + o1 + ...`).
    pub(super) sum: PtrSum,
    pub(super) e: TokenStream,
    /// The scalar element offset of iteration `__it`.
    pub(super) off_expr: TokenStream,
    /// The operand buffer's length (elements) and the code of the base pointer's distance
    /// from the buffer's start (elements, see `ScalarBase`).
    pub(super) len: Ident,
    pub(super) base_off: TokenStream,
    pub(super) tile_off: usize,
    pub(super) stage_bytes: usize,
    pub(super) per_thread: usize,
    pub(super) chunks: usize,
    /// Rotation of the rows each thread checks (see `gen_pipelined`).
    pub(super) rot: usize,
    pub(super) layout: Layout,
    pub(super) var: (Ident, TokenStream),
    /// The mask and `other` at element `__f0 + __i`, whether the 8 elements from `__f0` are
    /// unmasked, and the shared-memory offset (elements) of the chunk at `__f0` staged by rows.
    pub(super) m_i: TokenStream,
    pub(super) o_i: TokenStream,
    pub(super) all: TokenStream,
    pub(super) s0: TokenStream,
}

/// The pieces of an element check for an operand's dead lines (see `DevGen::tma_dead_lines`).
struct DeadLines {
    find_last: Option<TokenStream>,
    in_row: TokenStream,
    line_live: Option<TokenStream>,
    in_view: TokenStream,
}

/// One staging of a tensor-map operand.
pub(super) struct TmaSide {
    pub(super) staging: Staging,
    /// Its map's slot in the entry's list and validity mask.
    pub(super) idx: u32,
    /// Before the loop: `(map valid, boxes in the view, column, row, column step, row step,
    /// map row width, first offset)` of the first box, as one expression.
    pub(super) coords: TokenStream,
    /// After the first copies: whether this thread's elements are the boxes' (a `bool`).
    pub(super) post: TokenStream,
    /// Thread 0's copies of iteration `__it` into buffer `__buf`.
    pub(super) copies: TokenStream,
    /// Every thread: masked elements of iteration `__it` get `other`.
    pub(super) fixup: TokenStream,
}

/// A tensor-map operand: its stagings (`Rows` first) and, before the loop, the test ANDing
/// into `__mall`/`__mmid` whether this thread's elements are unmasked in every iteration.
pub(super) struct TmaOperand {
    pub(super) sides: Vec<TmaSide>,
    pub(super) check: TokenStream,
}

/// The pieces of the tensor-map version that `gen_pipelined` places.
pub(super) struct TmaVersion {
    /// Per operand: its staging flag and first box (before the first copies).
    pub(super) pre: Vec<TokenStream>,
    /// Per operand: whether its map is valid.
    pub(super) maps: Vec<TokenStream>,
    /// Thread 0's first copies.
    pub(super) fill: TokenStream,
    /// Per operand: `let __tok<i>: bool = ...` (the element checks).
    pub(super) post: Vec<TokenStream>,
    pub(super) oks: Vec<TokenStream>,
    /// The loop.
    pub(super) main: TokenStream,
    /// How many stages the first copies fill.
    pub(super) filled: i64,
}

impl DevGen<'_> {
    /// A rolled loop over this thread's lines (`tid, tid + threads, ...`, rotated by `c.rot`)
    /// of `count` (`__r`); with `row_len`, `__f0` is the line's first element of a row-major
    /// tile with rows of that length.
    fn tma_over_lines(&self, c: &TmaCtx, count: usize, row_len: Option<usize>, body: TokenStream) -> TokenStream {
        let d = &self.p.d;
        let (threads, rot) = (self.threads, c.rot);
        let f0 = row_len.map(|n| quote!(let __f0: usize = __r * #n;));
        quote! {
            let __nr: usize = #d::opaque_usize(#count);
            let mut __r: usize = (__tid + #rot) % #threads;
            while __r < __nr {
                #f0
                #body
                __r += #threads;
            }
        }
    }

    /// A rolled loop over this thread's 8-element chunks (opaque trip count: the code stays
    /// small, so the K loop fits the instruction cache), `__f0` the chunk's first element.
    pub(super) fn tma_over_chunks(&self, c: &TmaCtx, body: TokenStream) -> TokenStream {
        let d = &self.p.d;
        let (threads, per_thread, chunks) = (self.threads, c.per_thread, c.chunks);
        quote! {
            let __njc: usize = #d::opaque_usize(#per_thread);
            let mut __jc: usize = 0;
            while __jc < __njc {
                let __c: usize = __jc * #threads + __tid;
                if __c < #chunks {
                    let __f0: usize = __c * 8;
                    #body
                }
                __jc += 1;
            }
        }
    }

    /// The tensor-map copy of operand `ctx.oi` (loop variable `var`): a side for each of its
    /// candidate maps `tma` that the copy engine can take, the first in slot `first_map`, and
    /// the maps those sides use; `None` when no map fits.
    pub(super) fn tma_operand(&mut self, ctx: &TmaCtx<'_>, tma: &[(Staging, TmaDesc)], first_map: usize, var: LocalId) -> (Option<TmaOperand>, Vec<TmaDesc>) {
        let (mut sides, mut maps) = (Vec::new(), Vec::new());
        for (staging, t) in tma {
            let idx = (first_map + maps.len()) as u32;
            if let Some(side) = self.tma_side(ctx, *staging, t, idx) {
                sides.push(side);
                maps.push(t.clone());
            }
        }
        let oper = (!sides.is_empty()).then(|| TmaOperand { sides, check: self.tma_mask_check(ctx, var) });
        (oper, maps)
    }

    /// Operand `c.oi`'s side for `staging` with map `t` in slot `idx`.
    pub(super) fn tma_side(&mut self, c: &TmaCtx, staging: Staging, t: &TmaDesc, idx: u32) -> Option<TmaSide> {
        let d = &self.p.d;
        let (rows, inner) = (c.op.numel / c.op.inner, c.op.inner);
        // The box in map coordinates: `box_w` columns (elements of a map row) by `box_h` rows.
        let (tile, box_w, box_h) = match staging {
            Staging::Rows => (Tile::of(c.layout, rows, inner), inner, rows),
            Staging::Cols => (Tile::of(c.layout, inner, rows), rows, inner),
        };
        // The axis of the map (0: its rows, 1: its columns) along which the operand has dead
        // lines (`live.rs`), which may lie outside the view: staged by rows, the map's rows and
        // columns are the block's; staged by columns, the other way round.
        let relax = c.op.live.map(|l| match staging {
            Staging::Rows => l.axis,
            Staging::Cols => 1 - l.axis,
        });
        let coords = self.tma_coords(c, idx, &param_ident(&self.k.params[t.row_stride].name), (box_w, box_h), relax);
        let post = match staging {
            Staging::Rows => self.tma_post_rows(c)?,
            Staging::Cols => self.tma_post_cols(c)?,
        };
        let oi = c.oi;
        let (tc, tr, tdc, tdr) = (format_ident!("__tc{}", oi), format_ident!("__tr{}", oi), format_ident!("__tdc{}", oi), format_ident!("__tdr{}", oi));
        let (tile_off, stage_bytes) = (c.tile_off, c.stage_bytes);
        // Thread 0's copies of iteration `__it` into buffer `__buf` (one box per column block of
        // the staged tile), completing on barrier `__bar`.
        let copies = (0..box_w / tile.block).map(|b| {
            let soff = tile_off + b * tile.rows * tile.block * 2;
            let cb = (b * tile.block) as i64;
            quote!(#d::tma_load_2d(#d::smem_addr() + (#soff + __buf * #stage_bytes) as u32, __tma.add(#idx as usize * 128), __bar, (#tc as i32).wrapping_add((__it as i32).wrapping_mul(#tdc as i32)).wrapping_add(#cb as i32), (#tr as i32).wrapping_add((__it as i32).wrapping_mul(#tdr as i32)));)
        });
        let copies = quote!(#(#copies)*);
        // The copy brings every element: masked ones get `other` afterwards (each thread its
        // chunks whose mask is not all true; rare: the K tail).
        let fixup = match c.op.mask {
            None => quote!(),
            Some(_) => {
                let (all, m_i, o_i, e, s0) = (&c.all, &c.m_i, &c.o_i, &c.e, &c.s0);
                // Staged by rows the chunk is 8 consecutive elements; by columns each element
                // has its own place.
                let (chunk_at, store) = match staging {
                    Staging::Rows => (quote!(let __sp = __smem.add(#tile_off + __cb * #stage_bytes + (#s0) * 2) as *mut #e;), quote!(#d::store(__sp.add(__i), #o_i);)),
                    Staging::Cols => {
                        let idx_t = tile.index(quote!(((__f0 + __i) % #inner) * #rows + (__f0 + __i) / #inner));
                        (quote!(), quote!(#d::store(__smem.add(#tile_off + __cb * #stage_bytes + (#idx_t) * 2) as *mut #e, #o_i);))
                    }
                };
                self.tma_over_chunks(
                    c,
                    quote! {
                        if !(#all) {
                            #chunk_at
                            let __ne: usize = #d::opaque_usize(8);
                            let mut __i: usize = 0;
                            while __i < __ne {
                                if !(#m_i) {
                                    #store
                                }
                                __i += 1;
                            }
                            __fx = true;
                        }
                    },
                )
            }
        };
        Some(TmaSide { staging, idx, coords, post, copies, fixup })
    }

    /// The first box of a map with rows `pitch` elements apart and boxes of `box_w x box_h`, as
    /// `(valid, inside, c, r, dc, dr, W, O)` (see [`TmaSide::coords`]). The map needs, before the
    /// loop: a valid map, boxes that stay inside the map in every iteration (so that the copy
    /// engine fills nothing with zeros), moving along one row or by whole rows. Then the box of
    /// iteration `it` starts at column `c + it * dc`, row `r + it * dr`. `relax`: the axis
    /// (0: rows, 1: columns) along which the operand has dead lines, whose box need only start
    /// in the view (rows, for boxes moving along one row) or in its row (columns, for boxes
    /// moving by whole rows); the element check then tests that the live lines lie in it.
    fn tma_coords(&mut self, c: &TmaCtx, idx: u32, pitch: &Ident, (box_w, box_h): (usize, usize), relax: Option<usize>) -> TokenStream {
        let d = &self.p.d;
        let (off_expr, len, base_off) = (&c.off_expr, &c.len, &c.base_off);
        let first = self.offsets_at(c.op.base, &c.sum, &At::Flat(quote!(0usize)));
        let (inner_i, rows_i) = (box_w as i64, box_h as i64);
        let cols_by_rows = if relax == Some(1) { quote!(__cf < __w) } else { quote!(__cf + #inner_i <= __w) };
        let rows_along = if relax == Some(0) { quote!(__starts(__rf)) } else { quote!(__inside(__rf)) };
        quote! {{
            let __tW: i64 = #pitch as i64;
            let __tO: i64 = #first;
            let __first: i64 = { let __it: i64 = 0; #off_expr };
            let __second: i64 = { let __it: i64 = 1; #off_expr };
            let __last: i64 = { let __it: i64 = if __n > 0 { __n - 1 } else { 0 }; #off_expr };
            let __w: i64 = __tW;
            if (__tmask >> #idx) & 1 != 0 && __w > 0 && __w <= i32::MAX as i64 {
                // Offsets from the buffer's start (the base pointer may be inside it).
                let (__ef, __el) = (__tO + #base_off + __first, __tO + #base_off + __last);
                let __st: i64 = __second - __first;
                let __len: i64 = #len as i64;
                // One division (32-bit where the values allow, see `divrem`); the
                // last box's row follows from the first's in the common cases.
                let (__rf, __cf) = #d::divrem(__ef, __w);
                let (__sq, __sr) = if __st >= 0 && __st < __w { (0i64, __st) } else { #d::divrem(__st, __w) };
                let __nm: i64 = if __n > 0 { __n - 1 } else { 0 };
                // Rows `r .. r + rows` lie in the view (its `len / w` whole rows)
                // exactly when `(r + rows) * w <= len`; row `r` starts in it when
                // `(r + 1) * w <= len`.
                let __inside = |__r: i64| (__r + #rows_i) * __w <= __len;
                let __starts = |__r: i64| (__r + 1) * __w <= __len;
                // Every box but the last lies in the view; the last one (the K tail)
                // may only start in it, when boxes move forward: its elements outside
                // the view are filled with zeros by the copy engine, and must all be
                // masked (checked with the elements, `post`), so that the fix-up
                // gives them their `other` value.
                let (__dr, __dc, __cols, __rows, __rl) = if __sr == 0 {
                    // By whole rows.
                    let __rl = __rf + __nm * __sq;
                    let __rows = (__inside(__rf) && (__inside(__rl) || (__sq > 0 && __inside(__rl - __sq) && __starts(__rl)))) || (__nm == 0 && __starts(__rf));
                    (__sq, 0i64, #cols_by_rows, __rows, __rl)
                } else if __sq == 0 && __st > 0 {
                    // Along one row: the boxes stay in the first box's row.
                    let __cl = __cf + __nm * __st;
                    let __cols = __cl + #inner_i <= __w || (__cl < __w && (__nm == 0 || __cl - __st + #inner_i <= __w));
                    (0i64, __st, __cols, #rows_along, __rf)
                } else {
                    let (__rl, __cl) = #d::divrem(__el, __w);
                    (0i64, __st, __rf == __rl && __cf + #inner_i <= __w && __cl + #inner_i <= __w, __inside(__rf) && __inside(__rl), __rl)
                };
                let __ok: bool = __cols && __rows && __ef >= 0 && __el >= 0 && __rl + #rows_i <= i32::MAX as i64;
                (true, __ok, __cf, __rf, __dc, __dr, __tW, __tO)
            } else {
                (false, false, 0, 0, 0, 0, __tW, __tO)
            }
        }}
    }

    /// The element check of a `Rows` map: every element at `first + row * stride + col`,
    /// checked row by row (each thread takes rows `tid, tid + threads, ...`), at the row's two
    /// ends, for offsets that are affine along the row with a unit step (see `col_step_over`;
    /// offsets in several blocks: each block affine along the row without wrapping between the
    /// ends, their steps summing to one); and the elements of the last box outside the view
    /// masked. Where the operand has dead lines (`PipeOp::live`), only the live ones are
    /// checked, and they must lie in the view: each live row (dead rows), or the row up to the
    /// last live column (`__jl`, dead columns).
    fn tma_post_rows(&mut self, c: &TmaCtx) -> Option<TokenStream> {
        let (inner, rows_n) = (c.op.inner, c.op.numel / c.op.inner);
        let checks = self.tma_rows_checks(c, None)?;
        let checks = self.tma_with_dead_lines(c, checks, |g, c, live| g.tma_rows_checks(c, Some(live)), (inner, rows_n))?;
        Some(self.tma_post(c, checks.0, checks.1, inner, rows_n))
    }

    /// The element check of [`Self::tma_post_rows`] (the test, the test of the elements outside
    /// the view), of every row or only of the `live` ones.
    fn tma_rows_checks(&mut self, c: &TmaCtx, live: Option<LiveLines>) -> Option<(TokenStream, Option<TokenStream>)> {
        let d = &self.p.d;
        let op = c.op;
        let (inner, rows_n) = (op.inner, op.numel / op.inner);
        let last = inner - 1;
        // The last column checked (`__jl` with dead columns) and its distance from the first
        // (`span`, an `i64`), and the test of a row's liveness.
        let dead = self.tma_dead_lines(c, live, 0, last);
        let (cols, row_live) = (dead.find_last.as_ref(), dead.line_live.as_ref());
        let (last_col, span) = match cols {
            Some(_) => (quote!(__jl), quote!((__jl as i64))),
            None => {
                let last_i = last as i64;
                (quote!(#last), quote!(#last_i))
            }
        };
        let (at0, at1) = (At::Flat(quote!((__f0))), At::Flat(quote!((__f0 + #last_col))));
        let mut conds = Vec::new();
        // Per offsets block: its step along the row (`None`: constant along it), its values at
        // the row's ends, its type.
        let parts: Option<Vec<_>> = c
            .sum
            .offs
            .iter()
            .map(|&o| {
                let moves = self.child_moves(op.base, o, true);
                let step = match self.along(o, moves) {
                    Along::Const if c.sum.offs.len() > 1 => None,
                    _ => Some(self.col_step_over(o, moves, &self.sub_at(op.base, o, &at0), &self.sub_at(op.base, o, &at1), &span, &mut conds)?),
                };
                Some((step, self.operand(op.base, o, &at0), self.operand(op.base, o, &at1), self.elem(&self.k.exprs[o].ty)))
            })
            .collect();
        let row_test = match parts.as_deref() {
            None => quote!(__ok = false;),
            Some([(Some(step), v0, v1, ot)]) => quote! {
                let __v0: i64 = #d::cast::<#ot, i64>(#v0);
                let __v1: i64 = #d::cast::<#ot, i64>(#v1);
                __ok = __ok && #step == 1i64 #(&& #conds)* && __v1 - __v0 == #span && __v0 == __tO + (__r as i64) * __tW;
            },
            Some(parts) => {
                // A block constant along the row adds its value at the row's start; one that
                // varies steps by a constant without wrapping between the ends.
                let blocks = parts.iter().map(|(step, v0, v1, ot)| match step {
                    None => quote!(__v0 = __v0.wrapping_add(#d::cast::<#ot, i64>(#v0));),
                    Some(step) => quote! {{
                        let __s: i64 = #step;
                        let (__a, __b): (i64, i64) = (#d::cast::<#ot, i64>(#v0), #d::cast::<#ot, i64>(#v1));
                        __ok = __ok && __s.checked_mul(#span) == Some(__b.wrapping_sub(__a));
                        __st = __st.wrapping_add(__s);
                        __v0 = __v0.wrapping_add(__a);
                    }},
                });
                quote! {
                    let (mut __st, mut __v0): (i64, i64) = (0, 0);
                    #(#blocks)*
                    __ok = __ok && __st == 1i64 #(&& #conds)* && __v0 == __tO.wrapping_add((__r as i64).wrapping_mul(__tW));
                }
            }
        };
        // Dead rows are not checked; a live one must lie in the view (its box need only start
        // there, see `tma_coords`). With dead columns, the live ones must lie in the row.
        let row_test = match row_live {
            Some(live) => {
                let in_view = &dead.in_view;
                quote!(if #live { #in_view #row_test })
            }
            None => row_test,
        };
        let rows_test = self.tma_over_lines(c, rows_n, Some(inner), row_test);
        let in_row = &dead.in_row;
        let rows_test = quote!(#cols #in_row #rows_test);
        // The elements of the last box outside the view (a K tail, see `tma_coords`) must be
        // masked in the last iteration: each thread tests its rows' live elements there.
        let end_col = if cols.is_some() { quote!(__jl + 1) } else { quote!(#inner) };
        let outside = op.mask.map(|mk| {
            let m_j = self.operand(op.load, mk, &At::Flat(quote!((__f0 + __j))));
            let inside = self.tma_inside_unmasked(c, mk);
            let row = Self::tma_outside_line(&m_j, &end_col, row_live, &inside);
            let lines = self.tma_over_lines(c, rows_n, Some(inner), row);
            quote!(#cols #lines)
        });
        Some((rows_test, outside))
    }

    /// The element check of a `Cols` map (a transposed view, `row_stride` 1): with offsets
    /// `x[:, None] * row_stride + y[None, :] * col_stride` (`tma_terms`), every element is at
    /// `first + col * col_stride + row` when `x` and `y` step by one along the tile (each
    /// thread tests its rows of `x` and its columns of `y`) and no offsets block wraps
    /// (`tma_no_wrap`); and the elements of the last box outside the view masked. Where the
    /// operand has dead lines (`PipeOp::live`), only the live ones are checked: its live
    /// columns (the map's rows) must lie in the view, its rows up to the last live one (`__jl`,
    /// the map's columns) in the map's row.
    fn tma_post_cols(&mut self, c: &TmaCtx) -> Option<TokenStream> {
        let (rows_n, inner) = (c.op.numel / c.op.inner, c.op.inner);
        let checks = self.tma_cols_checks(c, None)?;
        let checks = self.tma_with_dead_lines(c, checks, |g, c, live| g.tma_cols_checks(c, Some(live)), (rows_n, inner))?;
        Some(self.tma_post(c, checks.0, checks.1, rows_n, inner))
    }

    /// The element check of [`Self::tma_post_cols`] (the test, the test of the elements outside
    /// the view), of every line or only of the `live` ones.
    fn tma_cols_checks(&mut self, c: &TmaCtx, live: Option<LiveLines>) -> Option<(TokenStream, Option<TokenStream>)> {
        let d = &self.p.d;
        let k = self.k;
        let op = c.op;
        let (rows_n, inner) = (op.numel / op.inner, op.inner);
        let (rows_term, cols_term) = self.tma_terms(&c.sum)?;
        let (x, y) = (rows_term.x, cols_term.x);
        // Dead rows: the last live one (`__jl`); dead columns: the test of a column.
        let dead = self.tma_dead_lines(c, live, 1, rows_n - 1);
        let (rows_end, col_live) = (dead.find_last.as_ref(), dead.line_live.clone());
        // `x` (or `y`) steps by one over lines `__r` where `guard` holds, and there `extra` holds.
        let mut unit = |v: ExprId, count: usize, guard: Option<TokenStream>, extra: TokenStream| {
            let t = self.elem(&k.exprs[v].ty);
            let (v0, vr) = (self.ev(v, &At::Flat(quote!(0usize))), self.ev(v, &At::Flat(quote!(__r))));
            let test = quote!(#extra __ok = __ok && #d::cast::<#t, i64>(#vr).wrapping_sub(#d::cast::<#t, i64>(#v0)) == __r as i64;);
            let test = match guard {
                Some(g) => quote!(if #g { #test }),
                None => test,
            };
            self.tma_over_lines(c, count, None, test)
        };
        let xs = unit(x, rows_n, rows_end.map(|_| quote!(__r <= __jl)), quote!());
        // A live column (a map row) must lie in the view (its box need only start there).
        let ys = unit(y, inner, col_live.clone(), dead.in_view.clone());
        let in_row = rows_end.map(|find| {
            let in_row = &dead.in_row;
            quote!(#find #in_row)
        });
        let no_wrap = self.tma_no_wrap(c, (rows_term.of, cols_term.of), (rows_n, inner));
        let test = quote! {
            #in_row
            #xs
            #ys
            #no_wrap
        };
        let end_row = if rows_end.is_some() { quote!(__jl + 1) } else { quote!(#rows_n) };
        let outside = op.mask.map(|mk| {
            let m_j = self.operand(op.load, mk, &At::Flat(quote!((__j * #inner + __r))));
            // (A map row is a column of the block, along which the chunk tests do not look.)
            let line = Self::tma_outside_line(&m_j, &end_row, col_live.as_ref(), &quote!(__mz = false;));
            let lines = self.tma_over_lines(c, inner, None, line);
            quote!(#rows_end #lines)
        });
        Some((test, outside))
    }

    /// How an element check treats the operand's dead lines `live` (none: every line checked):
    /// along the block's axis `per_line` the lines are the check's lines `__r`, each tested where
    /// it is live (`line_live`) and then required to lie in the view (`in_view`); along the other
    /// axis the check runs up to the last live line, `__jl` (`find_last`: its search from `last`),
    /// which must lie in the map's row (`in_row`).
    fn tma_dead_lines(&mut self, c: &TmaCtx, live: Option<LiveLines>, per_line: usize, last: usize) -> DeadLines {
        let (tr, tc, len) = (format_ident!("__tr{}", c.oi), format_ident!("__tc{}", c.oi), &c.len);
        let none = DeadLines { find_last: None, in_row: quote!(), line_live: None, in_view: quote!() };
        let Some(l) = live else { return none };
        if l.axis == per_line {
            let line_live = self.ev(l.pred, &At::Flat(quote!(__r)));
            return DeadLines { line_live: Some(line_live), in_view: quote!(__ok = __ok && (#tr + (__r as i64) + 1) * __tW <= #len as i64;), ..none };
        }
        let live_j = self.ev(l.pred, &At::Flat(quote!(__jl)));
        let find_last = quote! {
            let mut __jl: usize = #last;
            while __jl > 0 && !(#live_j) {
                __jl -= 1;
            }
        };
        DeadLines { find_last: Some(find_last), in_row: quote!(__ok = __ok && #tc + (__jl as i64) < __tW;), ..none }
    }

    /// The test of map line `__r` of the last box (where `live` holds, if given): its elements
    /// `__j` outside the view, up to `end`, are masked (`m_j`: the mask at element `__j`); and
    /// `inside`, which clears `__mz` unless the line's elements inside the view (the first
    /// `__je`) are unmasked.
    fn tma_outside_line(m_j: &TokenStream, end: &TokenStream, live: Option<&TokenStream>, inside: &TokenStream) -> TokenStream {
        let line = quote! {
            let __j0: i64 = if __rL + (__r as i64) >= __h { 0 } else { __w - __cL };
            let mut __j: usize = if __j0 > 0 { __j0 as usize } else { 0 };
            let __je: usize = if __j < #end { __j } else { #end };
            if __je > 0 {
                #inside
            }
            while __j < #end {
                __ok = __ok && !(#m_j);
                __j += 1;
            }
        };
        match live {
            Some(live) => quote!(if #live { #line }),
            None => line,
        }
    }

    /// For a `Rows` map line `__r` (first element `__f0`) of the last box: clears `__mz` unless
    /// its first `__je` elements (those inside the view, up to the line's end) are unmasked,
    /// tested at their two ends where the mask is monotone along the row, else element by
    /// element; and unless the copy engine's fill is the load's `other` (`+0`, or none). With
    /// every masked element of the last box outside the view, the copy engine has filled each
    /// of them with `other`: the fix-up has nothing to do (`__mz`, voted in `gen_pipelined`).
    fn tma_inside_unmasked(&mut self, c: &TmaCtx, mk: ExprId) -> TokenStream {
        let op = c.op;
        if !op.other.is_none_or(|o| is_zero_bits(self.k, o)) {
            return quote!(__mz = false;);
        }
        let moves = self.child_moves(op.load, mk, true);
        let at0 = self.sub_at(op.load, mk, &At::Flat(quote!((__f0))));
        let at1 = self.sub_at(op.load, mk, &At::Flat(quote!((__f0 + __je - 1))));
        match self.chunk_is(mk, true, moves, &at0, &at1) {
            Some(all) => quote!(__mz = __mz && #all;),
            None => {
                let m_i = self.operand(op.load, mk, &At::Flat(quote!((__f0 + __i))));
                quote! {
                    let mut __i: usize = 0;
                    while __i < __je {
                        __mz = __mz && #m_i;
                        __i += 1;
                    }
                }
            }
        }
    }

    /// The element checks `strict` (test, test outside the view) of every line, and, for an
    /// operand with dead lines (`PipeOp::live`), those of its live lines (`dead`), tried where
    /// the strict ones fail: the boxes of a block whose lines all lie in the view (`(box_w,
    /// box_h)` from the first box) take the strict checks first, the edge blocks the others.
    fn tma_with_dead_lines(&mut self, c: &TmaCtx, strict: (TokenStream, Option<TokenStream>), dead: impl FnOnce(&mut Self, &TmaCtx, LiveLines) -> Option<(TokenStream, Option<TokenStream>)>, (box_w, box_h): (usize, usize)) -> Option<(TokenStream, Option<TokenStream>)> {
        let Some(live) = c.op.live else { return Some(strict) };
        let (test, outside) = dead(self, c, live)?;
        let (tr, tc, tw, len) = (format_ident!("__tr{}", c.oi), format_ident!("__tc{}", c.oi), format_ident!("__tW{}", c.oi), &c.len);
        let (w, h) = (box_w as i64, box_h as i64);
        let fits = quote!((#tr + #h) * #tw <= #len as i64 && #tc + #w <= #tw);
        let (strict_test, strict_outside) = strict;
        // The dead-aware checks run out of line where cold paths do (`outline_cold`): inline,
        // their code in every block's prologue costs the blocks that do not run it.
        let d = &self.p.d;
        let either = |strict: TokenStream, dead: TokenStream| {
            // (Out of line, `__mz` goes in and comes back by value.)
            let dead = if self.outline_cold {
                quote! {
                    let (__dok, __dmz): (bool, bool) = #d::outline(move || {
                        let (mut __ok, mut __mz): (bool, bool) = (true, __mz);
                        #dead
                        (__ok, __mz)
                    });
                    __ok = __ok && __dok;
                    __mz = __dmz;
                }
            } else {
                dead
            };
            quote! {
                let __strict: bool = #fits && {
                    let mut __ok: bool = true;
                    #strict
                    __ok
                };
                if !__strict {
                    #dead
                }
            }
        };
        let outside = match (strict_outside, outside) {
            (Some(s), Some(d)) => Some(either(s, d)),
            (_, d) => d,
        };
        Some((either(strict_test, test), outside))
    }

    /// The test that no offsets block of a `Cols` map's operand wraps over the tile, given that
    /// the rows' term steps by one and the columns' term by `__tW` (`of`: the blocks holding
    /// them): each block's values lie between its value at the first element and that plus the
    /// increments of the terms it holds, inside the range of its type (half of it for `i64`).
    /// Then every block is affine over the tile, and so is their sum, from `__tO`.
    fn tma_no_wrap(&mut self, c: &TmaCtx, (rows_of, cols_of): (usize, usize), (rows_n, inner): (usize, usize)) -> TokenStream {
        let (k, d) = (self.k, &self.p.d);
        let (last_r, last_c) = (rows_n as i64 - 1, inner as i64 - 1);
        let range = |o: ExprId| match k.exprs[o].ty.dtype() {
            Some(DType::I32) => (quote!(i32::MIN as i64), quote!(i32::MAX as i64)),
            _ => (quote!(i64::MIN / 2), quote!(i64::MAX / 2)),
        };
        if let [o] = c.sum.offs[..] {
            let (min, max) = range(o);
            return quote!(__ok = __ok && __tO >= #min && __tO + #last_r + #last_c * __tW <= #max;);
        }
        let blocks = c.sum.offs.iter().enumerate().map(|(i, &o)| {
            let (min, max) = range(o);
            let (t, v) = (self.elem(&k.exprs[o].ty), self.operand(c.op.base, o, &At::Flat(quote!(0usize))));
            let r = if i == rows_of { last_r } else { 0 };
            let cl = if i == cols_of { last_c } else { 0 };
            quote!(__ok = __ok && { let __v: i64 = #d::cast::<#t, i64>(#v); __v >= #min && __v + #r + #cl * __tW <= #max };)
        });
        quote!(#(#blocks)*)
    }

    /// The element check around `test` (which ANDs into `__ok`): the boxes lie in the view,
    /// and, when the last box leaves the view, `outside` (or a failure without a mask).
    fn tma_post(&self, c: &TmaCtx, test: TokenStream, outside: Option<TokenStream>, box_w: usize, box_h: usize) -> TokenStream {
        let oi = c.oi;
        let (tin, tw, to, tc, tr, tdc, tdr) = (format_ident!("__tin{}", oi), format_ident!("__tW{}", oi), format_ident!("__tO{}", oi), format_ident!("__tc{}", oi), format_ident!("__tr{}", oi), format_ident!("__tdc{}", oi), format_ident!("__tdr{}", oi));
        let (var_id, var_t) = (&c.var.0, &c.var.1);
        let len = &c.len;
        let (inner_i, rows_i) = (box_w as i64, box_h as i64);
        // A masked operand whose last box lies in the view may have masked elements there.
        let inside = c.op.mask.map(|_| quote!(else { __mz = false; }));
        let outside = outside.unwrap_or_else(|| quote!(__ok = false;));
        quote! {
            #tin && {
                let (__tW, __tO): (i64, i64) = (#tw, #to);
                let mut __ok: bool = true;
                #test
                __ok
            } && {
                let __w: i64 = #tw;
                let __nm: i64 = if __n > 0 { __n - 1 } else { 0 };
                let (__cL, __rL): (i64, i64) = (#tc + __nm * #tdc, #tr + __nm * #tdr);
                let mut __ok: bool = true;
                // (No division unless the last box leaves the view.)
                if __cL + #inner_i > __w || (__rL + #rows_i) * __w > #len as i64 {
                    ::core::hint::cold_path();
                    let __h: i64 = (#len as i64) / __w;
                    let __it: i64 = __nm;
                    let #var_id: #var_t = ((__start as i64) + __it * (__step as i64)) as #var_t;
                    #outside
                } #inside
                __ok
            }
        }
    }

    /// The mask check of a tensor-map operand (see [`TmaOperand::check`]).
    pub(super) fn tma_mask_check(&mut self, c: &TmaCtx, var: LocalId) -> TokenStream {
        let op = c.op;
        let Some(mk) = op.mask else { return quote!() };
        let (var_id, var_t) = (&c.var.0, &c.var.1);
        // A mask whose comparisons are linear in the loop variable holds in every iteration
        // when it holds in the first and the last one. Also whether they are unmasked in the
        // iterations before the last one (`__mmid`): then only the last iteration needs the
        // fix-up (a K tail).
        if !self.linear_in(mk, var) {
            return quote!(__mall = false; __mmid = false;);
        }
        // Tested on whole rows when the analysis allows, else chunk by chunk.
        let all = &c.all;
        let row_all = self.load_chunk_all(op.load, mk, &quote!(__f0), op.inner);
        let at = |it: TokenStream, flag: Ident| {
            let test = match &row_all {
                Some(row_all) => self.tma_over_lines(c, op.numel / op.inner, Some(op.inner), quote!(#flag = #flag && (#row_all);)),
                None => self.tma_over_chunks(c, quote!(#flag = #flag && (#all);)),
            };
            quote! {{
                let __it: i64 = #it;
                let #var_id: #var_t = ((__start as i64) + __it * (__step as i64)) as #var_t;
                #test
            }}
        };
        let (first, last) = (at(quote!(0), format_ident!("__mall")), at(quote!(__n - 1), format_ident!("__mall")));
        let (first_mid, before_last) = (at(quote!(0), format_ident!("__mmid")), at(quote!(__n - 2), format_ident!("__mmid")));
        quote! {
            #first #last
            if !__mall && __n >= 2 { #first_mid #before_last }
        }
    }

    /// The tensor-map version of the loop over `opers`: each operand's staging picked from the
    /// maps' validity (`Rows` when its map is valid), and one loop for every combination of
    /// stagings, branching on them (`compute(stagings)` gives a combination's descriptor set-up,
    /// `wgmma` issue and wait).
    #[allow(clippy::type_complexity)]
    pub(super) fn tma_version(&self, opers: &[TmaOperand], (stages, readers): (usize, bool), bars: usize, tx: u32, compute: &dyn Fn(&[Staging]) -> (TokenStream, TokenStream, TokenStream), var: (&Ident, &TokenStream)) -> TmaVersion {
        let mut pre = Vec::new();
        let (mut maps, mut post, mut oks) = (Vec::new(), Vec::new(), Vec::new());
        for (oi, o) in opers.iter().enumerate() {
            let names = ["__tmo", "__tin", "__tc", "__tr", "__tdc", "__tdr", "__tW", "__tO"].map(|n| format_ident!("{}{}", n, oi));
            let tok = format_ident!("__tok{}", oi);
            let (s0, s1) = (&o.sides[0], o.sides.get(1));
            let (c0, p0) = (&s0.coords, &s0.post);
            let (coords, check) = match s1 {
                None => (quote!(#c0), quote!(#p0)),
                Some(s1) => {
                    let (i0, i1, c1, p1) = (s0.idx, s1.idx, &s1.coords, &s1.post);
                    let cols = quote!(((__tmask >> #i0) & 1 == 0 && (__tmask >> #i1) & 1 != 0));
                    (quote!(if #cols { #c1 } else { #c0 }), quote!(if #cols { #p1 } else { #p0 }))
                }
            };
            let [tmo, ..] = &names;
            pre.push(quote! {
                let (#(#names),*): (bool, bool, i64, i64, i64, i64, i64, i64) = #coords;
            });
            maps.push(quote!(#tmo));
            post.push(quote!(let #tok: bool = #check;));
            oks.push(quote!(#tok));
        }
        // Whether operand `o` takes staging `s` (uniform over the block: the maps' validity).
        let takes = |o: &TmaOperand, s: usize| -> Option<TokenStream> {
            let (i0, i1) = (o.sides[0].idx, o.sides.get(1)?.idx);
            let cols = quote!(((__tmask >> #i0) & 1 == 0 && (__tmask >> #i1) & 1 != 0));
            Some(if o.sides[s].staging == Staging::Cols { cols } else { quote!(!#cols) })
        };
        // `if c0 { x0 } else if c1 { x1 } ... else { xn }` (the last arm taken when no other is).
        let chain = |arms: Vec<(TokenStream, TokenStream)>| {
            arms.into_iter().rev().fold(None, |rest: Option<TokenStream>, (cond, body)| {
                Some(match rest {
                    None => body,
                    Some(rest) => quote!(if #cond { #body } else { #rest }),
                })
            })
        };
        // One loop for every combination of stagings: each operand's copies and fix-up, and the
        // `wgmma` issue (whose transpose bits are immediates), branch on uniform conditions.
        let per_side = |f: &dyn Fn(&TmaSide) -> TokenStream| -> Vec<TokenStream> {
            opers.iter().map(|o| chain(o.sides.iter().enumerate().map(|(si, side)| (takes(o, si).unwrap_or_default(), f(side))).collect()).unwrap_or_default()).collect()
        };
        let (copies, fixups) = (per_side(&|t| t.copies.clone()), per_side(&|t| t.fixup.clone()));
        let ops: Vec<TmaOp> = copies.into_iter().zip(fixups).map(|(copies, fixup)| TmaOp { copies, fixup }).collect();
        let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
        for o in opers {
            combos = combos.into_iter().flat_map(|c| (0..o.sides.len()).map(move |s| [c.clone(), vec![s]].concat())).collect();
        }
        let (mut setups, mut issues, mut finish) = (Vec::new(), Vec::new(), quote!());
        for combo in &combos {
            let conds = opers.iter().zip(combo).filter_map(|(o, s)| takes(o, *s));
            let cond = quote!(true #(&& #conds)*);
            let stagings: Vec<Staging> = opers.iter().zip(combo).map(|(o, s)| o.sides[*s].staging).collect();
            let (setup, issue, fin) = compute(&stagings);
            setups.push((cond.clone(), quote!({ #setup (__da0, __db0) })));
            issues.push((cond, issue));
            finish = fin;
        }
        let (setup, issue) = (chain(setups).unwrap_or_default(), chain(issues).unwrap_or_default());
        let (fill, main, filled) = self.tma_loop(&ops, (stages, readers), bars, tx, (&issue, &finish), var);
        let main = quote!({
            let (__da0, __db0): (u64, u64) = #setup;
            #main
        });
        TmaVersion { pre, maps, fill, post, oks, main, filled }
    }
}
