//! How pure block expressions vary along a chunk of 8 consecutive elements of a block's
//! innermost axis (the unit of a 16-byte copy), so that "is the mask true on the whole chunk"
//! costs one or two evaluations instead of eight.
//!
//! Along a chunk an expression is *constant* (it does not depend on the innermost index, e.g.
//! `offs_m[:, None] < M`), *increasing by one* (`arange` and sums of it with constants, e.g.
//! `offs_k[None, :]`), or anything else. A comparison of an increasing value with a constant
//! holds on the whole chunk when it holds at the right end and the value did not wrap around.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Along {
    Const,
    Inc1,
    Other,
}

impl DevGen<'_> {
    /// Whether a chunk of `parent` (whose elements `moves` along `parent`'s flat index) also moves
    /// along `child`'s flat index after broadcasting, rather than staying on one element.
    pub(super) fn child_moves(&self, parent: ExprId, child: ExprId, moves: bool) -> bool {
        let (p, c) = (&self.shapes[parent], &self.shapes[child]);
        moves && !c.is_empty() && c.last() == p.last() && c.last().is_some_and(|n| *n > 1)
    }

    /// The position of `child` that position `at` of `parent` reads.
    pub(super) fn sub_at(&self, parent: ExprId, child: ExprId, at: &At) -> At {
        if self.shapes[child].is_empty() {
            At::Own
        } else {
            self.map_broadcast(at, &self.shapes[parent], &self.shapes[child])
        }
    }

    /// How the pure expression `e` varies between consecutive elements of a chunk; `moves`:
    /// whether those elements are consecutive flat indices of `e` (else they are all one).
    pub(super) fn along(&self, e: ExprId, moves: bool) -> Along {
        use Along::*;
        if !moves || self.shapes[e].is_empty() {
            return Const;
        }
        let k = self.k;
        let int = matches!(k.exprs[e].ty.dtype(), Some(DType::I32 | DType::I64 | DType::U32));
        let sub = |c: ExprId| self.along(c, self.child_moves(e, c, moves));
        match &k.exprs[e].kind {
            ExprKind::Arange { .. } => Inc1,
            ExprKind::Param(_) | ExprKind::Meta(_) | ExprKind::Lit(_) | ExprKind::ProgramId(_) | ExprKind::NumPrograms(_) | ExprKind::Full(_) => Const,
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Scalar => Const,
                LocalKind::Pure(init) => self.along(init, moves),
                _ => Other,
            },
            ExprKind::ExpandDims(x, _) => self.along(*x, moves),
            ExprKind::Reshape(x) if self.shapes[*x] == self.shapes[e] => self.along(*x, moves),
            ExprKind::BroadcastTo(x) => sub(*x),
            ExprKind::Binary(op, a, b) => match (op, sub(*a), sub(*b)) {
                (_, Const, Const) => Const,
                (BinOp::Add, Inc1, Const) | (BinOp::Add, Const, Inc1) | (BinOp::Sub, Inc1, Const) if int => Inc1,
                _ => Other,
            },
            ExprKind::Unary(_, x) | ExprKind::Cast(x) if sub(*x) == Const => Const,
            ExprKind::Math(_, xs) if xs.iter().all(|x| sub(*x) == Const) => Const,
            ExprKind::Where(c, a, b) if [*c, *a, *b].iter().all(|x| sub(*x) == Const) => Const,
            ExprKind::PtrAdd(a, b) if sub(*a) == Const && sub(*b) == Const => Const,
            _ => Other,
        }
    }

    /// A boolean expression that is true only when the boolean block `e` is true at all
    /// elements of the chunk whose first and last elements are at `at0` and `at7` of `e`
    /// (`moves` as in [`Self::along`]). `None` when the analysis cannot tell: the caller then
    /// tests the 8 elements one by one.
    pub(super) fn chunk_all(&mut self, e: ExprId, moves: bool, at0: &At, at7: &At) -> Option<TokenStream> {
        self.chunk_is(e, true, moves, at0, at7)
    }

    /// A boolean expression that is true only when the boolean block `e` is `want` at all
    /// elements of the chunk ([`Self::chunk_all`] for `want`, "none of them" for `!want`).
    pub(super) fn chunk_is(&mut self, e: ExprId, want: bool, moves: bool, at0: &At, at7: &At) -> Option<TokenStream> {
        let k = self.k;
        let d = &self.p.d;
        if self.along(e, moves) == Along::Const {
            let at = if self.shapes[e].is_empty() { At::Own } else { at0.clone() };
            let v = self.ev(e, &at);
            return Some(if want { v } else { quote!((!#v)) });
        }
        let mut sub = |c: ExprId| self.chunk_is(c, want, self.child_moves(e, c, moves), &self.sub_at(e, c, at0), &self.sub_at(e, c, at7));
        match &k.exprs[e].kind {
            ExprKind::Binary(BinOp::And, a, b) if k.exprs[e].ty.dtype() == Some(DType::Bool) => {
                // All of `a && b`: all of both; none of it: none of one of them.
                let (x, y) = (sub(*a), sub(*b));
                match (want, x, y) {
                    (true, Some(x), Some(y)) => Some(quote!((#x && #y))),
                    (false, Some(x), Some(y)) => Some(quote!((#x || #y))),
                    (false, Some(x), None) | (false, None, Some(x)) => Some(x),
                    _ => None,
                }
            }
            ExprKind::Binary(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
                // None of `x < c`: all of `x >= c`, and so on.
                let op = match (want, op) {
                    (true, op) => *op,
                    (false, BinOp::Lt) => BinOp::Ge,
                    (false, BinOp::Le) => BinOp::Gt,
                    (false, BinOp::Gt) => BinOp::Le,
                    (false, _) => BinOp::Lt,
                };
                let op = &op;
                let (ma, mb) = (self.child_moves(e, *a, moves), self.child_moves(e, *b, moves));
                let t = self.elem(&k.exprs[*a].ty);
                let num = quote!(<#t as #d::Num>);
                let (x0, x7, c) = (self.fresh("x"), self.fresh("x"), self.fresh("c"));
                // `inc` is the increasing side, `cst` the constant one; `inc_left`: `inc op cst`.
                let (inc, cst, inc_left) = match (self.along(*a, ma), self.along(*b, mb)) {
                    (Along::Inc1, Along::Const) => (*a, *b, true),
                    (Along::Const, Along::Inc1) => (*b, *a, false),
                    _ => return None,
                };
                let v0 = self.ev(inc, &self.sub_at(e, inc, at0));
                let v7 = self.ev(inc, &self.sub_at(e, inc, at7));
                let vc = self.ev(cst, &self.sub_at(e, cst, at0));
                // Every element lies between the two ends when the value did not wrap.
                let test = match (op, inc_left) {
                    (BinOp::Lt, true) => quote!(#num::lt(#x7, #c)),
                    (BinOp::Le, true) => quote!(#num::le(#x7, #c)),
                    (BinOp::Gt, true) => quote!(#num::gt(#x0, #c)),
                    (BinOp::Ge, true) => quote!(#num::ge(#x0, #c)),
                    (BinOp::Lt, false) => quote!(#num::lt(#c, #x0)),
                    (BinOp::Le, false) => quote!(#num::le(#c, #x0)),
                    (BinOp::Gt, false) => quote!(#num::gt(#c, #x7)),
                    (BinOp::Ge, false) => quote!(#num::ge(#c, #x7)),
                    _ => return None,
                };
                Some(quote!({
                    let #x0 = #v0;
                    let #x7 = #v7;
                    let #c = #vc;
                    #num::ge(#x7, #x0) && #test
                }))
            }
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.chunk_is(init, want, moves, at0, at7),
                _ => None,
            },
            ExprKind::ExpandDims(x, _) => self.chunk_is(*x, want, moves, at0, at7),
            ExprKind::BroadcastTo(x) => sub(*x),
            _ => None,
        }
    }

    /// The chunk test of the mask of `load` (a boolean block broadcast to the load's shape):
    /// true only when all `len` elements from flat index `f0` of the load are unmasked (a
    /// chunk lies within one row of the load).
    pub(super) fn load_chunk_all(&mut self, load: ExprId, mask: ExprId, f0: &TokenStream, len: usize) -> Option<TokenStream> {
        self.load_chunk_is(load, mask, true, f0, len)
    }

    /// [`Self::load_chunk_all`] for `want`: true only when the mask is `want` on the whole chunk.
    pub(super) fn load_chunk_is(&mut self, load: ExprId, mask: ExprId, want: bool, f0: &TokenStream, len: usize) -> Option<TokenStream> {
        let moves = self.child_moves(load, mask, true);
        let last = len - 1;
        let at0 = self.sub_at(load, mask, &At::Flat(quote!((#f0))));
        let at7 = self.sub_at(load, mask, &At::Flat(quote!((#f0 + #last))));
        self.chunk_is(mask, want, moves, &at0, &at7)
    }

    /// The increment of the integer or pointer block `e` from one element of a row (its
    /// innermost axis) to the next, as an `i64` expression evaluated at position `at` of `e`
    /// (`moves` as in [`Self::along`]; pointers step in elements): `Some` when `e` is affine in
    /// the column index, i.e. built from values constant along the row, `arange`, sums,
    /// differences and negations, and products with one factor constant along the row. The
    /// kernel's integer arithmetic wraps, so the true increment is this value modulo the width
    /// of `e`'s type: an increment of exactly 1 here means consecutive offsets modulo that
    /// width, and the caller rules out a wrap between two elements by comparing their
    /// addresses.
    pub(super) fn col_step(&mut self, e: ExprId, moves: bool, at: &At) -> Option<TokenStream> {
        self.col_step_in(e, moves, at, None, &mut Vec::new())
    }

    /// [`Self::col_step`] over the `span + 1` elements of a row from position `at` to `end`
    /// (`span`: an `i64` expression),
    /// which also takes a remainder `x % m` of a unit-step `x` by a value constant along the row
    /// (the columns of a tile wrapped around a tensor's edge, `(pid * BLOCK + arange) % N`):
    /// it steps by one on the span when it does not wrap there, which the conditions pushed on
    /// `conds` test (its values at both ends differ by `span`); and a `where_(c, a, b)` whose
    /// condition holds on the whole span (columns clamped at the edge, `where_(offs < N, offs,
    /// 0)`), which steps as `a` there.
    pub(super) fn col_step_over(&mut self, e: ExprId, moves: bool, at: &At, end: &At, span: &TokenStream, conds: &mut Vec<TokenStream>) -> Option<TokenStream> {
        self.col_step_in(e, moves, at, Some((end, span)), conds)
    }

    /// Whether the boolean block `c` holds on an interval of the row's elements from `at` to
    /// `end` (`span + 1` of them): a conjunction of comparisons of integer values affine along
    /// the row, each of which the conditions pushed on `conds` check does not wrap between the
    /// two ends (its values there differ by its step times `span`).
    fn interval_over(&mut self, c: ExprId, moves: bool, at: &At, (end, span): (&At, &TokenStream), conds: &mut Vec<TokenStream>) -> Option<()> {
        let k = self.k;
        let d = &self.p.d;
        if self.along(c, moves) == Along::Const {
            return Some(());
        }
        let children = |g: &mut Self, x: ExprId| (g.child_moves(c, x, moves), g.sub_at(c, x, at), g.sub_at(c, x, end));
        match &k.exprs[c].kind {
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.interval_over(init, moves, at, (end, span), conds),
                _ => None,
            },
            ExprKind::ExpandDims(x, _) => self.interval_over(*x, moves, at, (end, span), conds),
            ExprKind::BroadcastTo(x) => {
                let (m, a0, a1) = children(self, *x);
                self.interval_over(*x, m, &a0, (&a1, span), conds)
            }
            ExprKind::Binary(BinOp::And, x, y) => {
                for z in [*x, *y] {
                    let (m, a0, a1) = children(self, z);
                    self.interval_over(z, m, &a0, (&a1, span), conds)?;
                }
                Some(())
            }
            ExprKind::Binary(BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, x, y) => {
                for z in [*x, *y] {
                    let (m, a0, a1) = children(self, z);
                    let step = self.col_step_in(z, m, &a0, None, &mut Vec::new())?;
                    let t = self.elem(&k.exprs[z].ty);
                    let (v0, v1) = (self.ev(z, &a0), self.ev(z, &a1));
                    conds.push(quote!((#d::cast::<#t, i64>(#v1).wrapping_sub(#d::cast::<#t, i64>(#v0)) == (#step).wrapping_mul(#span))));
                }
                Some(())
            }
            _ => None,
        }
    }

    fn col_step_in(&mut self, e: ExprId, moves: bool, at: &At, end: Option<(&At, &TokenStream)>, conds: &mut Vec<TokenStream>) -> Option<TokenStream> {
        let k = self.k;
        let d = &self.p.d;
        if self.along(e, moves) == Along::Const {
            return Some(quote!(0i64));
        }
        // The step of child `c` of `e`.
        let sub = |g: &mut Self, c: ExprId, conds: &mut Vec<TokenStream>| {
            let se = end.map(|(a, n)| (g.sub_at(e, c, a), n));
            let (moves_c, at_c) = (g.child_moves(e, c, moves), g.sub_at(e, c, at));
            g.col_step_in(c, moves_c, &at_c, se.as_ref().map(|(a, n)| (a, *n)), conds)
        };
        let int = |x: ExprId| matches!(k.exprs[x].ty.dtype(), Some(DType::I32 | DType::I64 | DType::U32));
        match &k.exprs[e].kind {
            ExprKind::Arange { .. } => Some(quote!(1i64)),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(init) => self.col_step_in(init, moves, at, end, conds),
                _ => None,
            },
            ExprKind::ExpandDims(x, _) => self.col_step_in(*x, moves, at, end, conds),
            ExprKind::Reshape(x) if self.shapes[*x] == self.shapes[e] => self.col_step_in(*x, moves, at, end, conds),
            ExprKind::BroadcastTo(x) => sub(self, *x, conds),
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) if int(e) => {
                let (sa, sb) = (sub(self, *a, conds)?, sub(self, *b, conds)?);
                Some(match op {
                    BinOp::Add => quote!((#sa).wrapping_add(#sb)),
                    _ => quote!((#sa).wrapping_sub(#sb)),
                })
            }
            ExprKind::Binary(BinOp::Mul, a, b) if int(e) => {
                let konst = |c: ExprId| self.along(c, self.child_moves(e, c, moves)) == Along::Const;
                let (c, x) = if konst(*a) { (*a, *b) } else if konst(*b) { (*b, *a) } else { return None };
                let t = self.elem(&k.exprs[c].ty);
                let at_c = if self.shapes[c].is_empty() { At::Own } else { self.sub_at(e, c, at) };
                let vc = self.ev(c, &at_c);
                let sx = sub(self, x, conds)?;
                Some(quote!(#d::cast::<#t, i64>(#vc).wrapping_mul(#sx)))
            }
            ExprKind::Binary(BinOp::Rem, x, m) if int(e) && end.is_some() && self.along(*m, self.child_moves(e, *m, moves)) == Along::Const => {
                let (at1, span) = end?;
                let sx = sub(self, *x, conds)?;
                let t = self.elem(&k.exprs[e].ty);
                let (v0, v1) = (self.ev(e, at), self.ev(e, at1));
                conds.push(quote!((#sx == 1i64 && #d::cast::<#t, i64>(#v1).wrapping_sub(#d::cast::<#t, i64>(#v0)) == #span)));
                Some(quote!(1i64))
            }
            // Where the condition holds on the whole span, the value taken there (the rows or
            // columns of a tile clamped at a tensor's edge, `where_(offs < N, offs, 0)`): the
            // condition, made of comparisons of values that are affine along the row and do not
            // wrap on the span, holds on an interval, so holding at both ends it holds between.
            ExprKind::Where(c, a, _) if int(e) && end.is_some() => {
                let (at1, span) = end?;
                let (c_moves, c0, c1) = (self.child_moves(e, *c, moves), self.sub_at(e, *c, at), self.sub_at(e, *c, at1));
                self.interval_over(*c, c_moves, &c0, (&c1, span), conds)?;
                let (v0, v1) = (self.ev(*c, &c0), self.ev(*c, &c1));
                conds.push(quote!((#v0 && #v1)));
                sub(self, *a, conds)
            }
            ExprKind::Unary(UnOp::Neg, x) if int(e) => {
                let sx = sub(self, *x, conds)?;
                Some(quote!((#sx).wrapping_neg()))
            }
            ExprKind::PtrAdd(p, o) if self.along(*p, self.child_moves(e, *p, moves)) == Along::Const && int(*o) => sub(self, *o, conds),
            _ => None,
        }
    }
}
