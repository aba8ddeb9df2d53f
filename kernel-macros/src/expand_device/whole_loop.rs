//! Whole-block tests stated once for a whole loop. In a loop `for v in range(s, e, B)` over the
//! blocks of a row (Triton's `cols = off + arange(0, BLOCK)`, `load(row + cols, cols < n)`),
//! an access whose pointers and mask move by one element per unit of `v` (their offsets are `v
//! + arange(0, B)` plus loop-invariant scalars, the mask's other side is loop-invariant, and the
//! loop steps by the block's length) reads, over all iterations, the elements of one longer
//! block: the union of the iterations' blocks, `L = (n - 1) * B + B` elements from the first
//! iteration's. The whole-block test of that union ([`DevGen::whole_block_test`]'s, with the
//! union's length) holds for every iteration when it holds: each iteration's kept chunks are
//! chunks of the union's kept prefix (the steps are whole chunks), the pointers are the union's
//! (wrapping sums do not depend on the order of the terms) and the first pointer of each
//! iteration stays aligned (the block's length in bytes is a multiple of the alignment). So the
//! test runs once, before the loop (`DevGen::for_stmt` places it). A later loop of the same
//! statement sequence (or code nested in it) whose access would compute the same test, from the
//! same loop bounds and values that cannot have changed since (locals given one value, no loads),
//! reads the earlier loop's flags instead: a row's three loops over `x` (layer norm) test `x`
//! once. The accesses of one phase share one pair of flags. Only where a thread holds few chunks
//! of the block ([`MAX_LOOP_TEST_CHUNKS`]).

use super::whole::WholeTest;
use super::*;

/// The most chunks a thread may hold in each phase of an access tested once per loop: with more,
/// the per-iteration test is a small part of the phase's work, while the flags computed before
/// the loop stay live across its body and cost registers (layer norm's 8192-column blocks, four
/// chunks a thread, went from 80 to 84 registers: two blocks per multiprocessor instead of three).
const MAX_LOOP_TEST_CHUNKS: usize = 2;

/// A loop-level test registered for the loop over `var`: the statements computing its flags
/// (`code`, with `__start`, `__end` and `__step` in scope) and the flags they declare; `key`
/// where later loops may reuse them (see [`SharedTest`]).
pub(super) struct LoopTest {
    var: LocalId,
    code: TokenStream,
    flags: [Ident; 2],
    key: Option<String>,
}

/// The flags of a loop-level test computed before an earlier loop of a statement sequence,
/// with what it computed: its code with the loop variable renamed, and the loop's bounds.
pub(super) struct SharedTest {
    key: String,
    flags: [Ident; 2],
}

impl DevGen<'_> {
    /// The loop-level test of the access `parent` through pointer block `ptr` with the prefix
    /// mask `bounds` (or none), a block of `numel` elements in chunks of `v` of `size` bytes whose
    /// column step is `step` (tokens): registered for the loop to place before itself, and its
    /// flags returned as the access's test. `None` where the access does not qualify (see the
    /// module documentation).
    pub(super) fn whole_loop_test(&mut self, parent: ExprId, ptr: ExprId, bounds: Option<(ExprId, ExprId, bool)>, (numel, v, size): (usize, usize, usize), step: &TokenStream) -> Option<WholeTest> {
        let k = self.k;
        if self.per_thread(numel) / v > MAX_LOOP_TEST_CHUNKS {
            return None;
        }
        let (lv, (start, end), body) = self.row_loop(ptr)?;
        let inside = loop_values(body);
        let sum = self.ptr_sum(ptr)?;
        if self.depends_on(sum.base, lv) || !self.loop_steady(ptr, lv, &inside) {
            return None;
        }
        let mut units = (0, 0);
        for o in &sum.offs {
            self.unit_terms(*o, lv, numel, &inside, &mut units)?;
        }
        if units != (1, 1) {
            return None;
        }
        if let Some((a, b, _)) = bounds {
            let mut au = (0, 0);
            self.unit_terms(a, lv, numel, &inside, &mut au)?;
            if au != (1, 1) || self.depends_on(b, lv) || !self.loop_steady(a, lv, &inside) || !self.loop_steady(b, lv, &inside) {
                return None;
            }
        }
        let chunk_align = (v * size).min(16);
        if (numel * size) % chunk_align != 0 || (numel * size) % super::vector::PIECES_ALIGN != 0 {
            return None;
        }
        let clean_p0 = (self.multiples.at0(ptr) % chunk_align as u64 != 0).then(|| quote!(&& (__p0 as usize) % #chunk_align == 0));
        let prefix = match bounds {
            None => quote!(__ul),
            Some(b) => self.prefix_kept(parent, b, (quote!(__ul), quote!(__ul as i64 - 1))),
        };
        let p0 = self.operand(parent, ptr, &At::Flat(quote!(0usize)));
        let checks = self.range_checks(parent, ptr, step, size);
        let id = crate::expand_cpu::local_ident(k, lv);
        let t = self.elem(&k.locals[lv].ty);
        let value = quote! {
            {
                let __span: i64 = (__end as i64) - (__start as i64);
                if __span <= 0 {
                    (true, true)
                } else {
                    let #id: #t = __start;
                    // The loop's trip count times the step (a constant: no division).
                    let __ul: usize = ((__span + (#numel as i64 - 1)) / (#numel as i64) * (#numel as i64)) as usize;
                    let __e: usize = #prefix;
                    let __eu: usize = ::core::cmp::min((__e + (#v - 1)) / #v * #v, __ul);
                    let __p0 = #p0;
                    let __ok: bool = __eu == 0 || (#checks);
                    (__ok, __ok && __e % #v == 0 #clean_p0)
                }
            }
        };
        let fixed = [ptr, start, end].into_iter().chain(bounds.iter().flat_map(|(a, b, _)| [*a, *b])).all(|e| self.fixed(e, lv));
        let key = fixed.then(|| format!("{} | {} | {}", k.expr_text(start), k.expr_text(end), renamed(value.clone(), &id, &format_ident!("__loop_var"))));
        if let Some([test, clean]) = key.as_ref().and_then(|key| self.shared_test(lv, key)) {
            return Some(WholeTest { test: quote!(#test), clean: Some(quote!(#clean)), looped: Some(lv) });
        }
        let (test, clean) = (self.fresh("lt"), self.fresh("lc"));
        let code = quote!(let (#test, #clean): (bool, bool) = #value;);
        self.loop_tests.push(LoopTest { var: lv, code, flags: [test.clone(), clean.clone()], key });
        Some(WholeTest { test: quote!(#test), clean: Some(quote!(#clean)), looped: Some(lv) })
    }

    /// The flags of an earlier loop's test with `key`, computed before that loop in the
    /// statement sequence loop `lv` is part of or in one around it.
    fn shared_test(&self, lv: LocalId, key: &str) -> Option<[Ident; 2]> {
        let frame = *self.loop_frames.get(&lv)?;
        self.test_frames.get(..=frame)?.iter().flatten().find(|t| t.key == key).map(|t| t.flags.clone())
    }

    /// Whether `e` has the same value wherever a loop over `lv` may evaluate it in one run of
    /// the statements around that loop, apart from `lv` itself: it reads no memory and no local
    /// given more than one value (a `let` once; a loop variable of a loop around is fixed for
    /// a run of its body).
    fn fixed(&self, e: ExprId, lv: LocalId) -> bool {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Local(l) if *l == lv => true,
            ExprKind::Local(l) => {
                let values = self.assigned.get(l).map_or(0, Vec::len);
                let is_loop_var = self.loops.contains_key(l);
                (is_loop_var && values == 0 || !is_loop_var && values == 1)
                    && match self.kinds[*l] {
                        LocalKind::Pure(v) | LocalKind::Inline(v) => self.fixed(v, lv),
                        _ => true,
                    }
            }
            ExprKind::Load { .. } | ExprKind::Atomic { .. } | ExprKind::Random { .. } | ExprKind::Dot { .. } | ExprKind::Reduce { .. } | ExprKind::Scan { .. } | ExprKind::ReduceWith { .. } => false,
            kind => kind.operands().into_iter().all(|c| self.fixed(c, lv)),
        }
    }

    /// The loop whose variable `ptr` reads, with its bounds and body, when the loop steps by a
    /// compile-time constant (checked by the caller against the block's length through
    /// [`Self::unit_terms`] and here) and `ptr` reads no other loop's variable.
    fn row_loop(&self, ptr: ExprId) -> Option<(LocalId, (ExprId, ExprId), &[Stmt])> {
        let mut vars = self.loops.keys().filter(|l| self.depends_on(ptr, **l));
        let lv = *vars.next()?;
        if vars.next().is_some() {
            return None;
        }
        let (start, end, step, body) = find_loop(&self.k.body, lv)?;
        let numel = self.shapes[ptr].iter().product::<usize>() as i64;
        (self.multiples.constant(step) == Some(numel)).then_some((lv, (start, end), body))
    }

    /// Counts, in `units`, the terms of the integer block `e` (a sum, through pure locals) that
    /// are the loop variable `lv` and an `arange` of `numel` elements; `None` when a term is
    /// neither of them nor a loop-invariant scalar (one that reads no value the loop body
    /// defines).
    fn unit_terms(&self, e: ExprId, lv: LocalId, numel: usize, inside: &HashMap<LocalId, Vec<ExprId>>, units: &mut (usize, usize)) -> Option<()> {
        let k = self.k;
        if !matches!(k.exprs[e].ty.dtype(), Some(DType::I32 | DType::I64)) {
            return None;
        }
        match &k.exprs[e].kind {
            ExprKind::Local(l) if *l == lv => units.0 += 1,
            ExprKind::Local(l) if matches!(self.kinds[*l], LocalKind::Pure(_)) && !self.shapes[e].is_empty() => {
                let LocalKind::Pure(init) = self.kinds[*l] else { return None };
                self.unit_terms(init, lv, numel, inside, units)?;
            }
            ExprKind::Arange { start, end } => {
                let n = end.eval(&|x| self.vals.get(x).copied())? - start.eval(&|x| self.vals.get(x).copied())?;
                if n != numel as i64 {
                    return None;
                }
                units.1 += 1;
            }
            ExprKind::Binary(BinOp::Add, a, b) => {
                self.unit_terms(*a, lv, numel, inside, units)?;
                self.unit_terms(*b, lv, numel, inside, units)?;
            }
            // A scalar spread over the block.
            ExprKind::BroadcastTo(x) | ExprKind::Full(x) if self.shapes[*x].iter().product::<usize>() == 1 => self.unit_terms(*x, lv, numel, inside, units)?,
            _ if self.shapes[e].iter().product::<usize>() == 1 && !self.depends_on(e, lv) && self.loop_steady(e, lv, inside) => {}
            _ => return None,
        }
        Some(())
    }

    /// One pair of flags for the loop-level tests `tests` (test, clean) of one phase in the
    /// loop over `var`, computed before the loop after theirs: the loop then keeps two flags
    /// live instead of two per access.
    pub(super) fn combine_loop_tests(&mut self, var: LocalId, tests: &[TokenStream], cleans: &[TokenStream]) -> (TokenStream, TokenStream) {
        let (t, c) = (self.fresh("lt"), self.fresh("lc"));
        let code = quote!(let (#t, #c): (bool, bool) = (true #(&& #tests)*, true #(&& #cleans)*););
        self.loop_tests.push(LoopTest { var, code, flags: [t.clone(), c.clone()], key: None });
        (quote!(#t), quote!(#c))
    }

    /// The loop-level tests registered for the loop over `var` (see
    /// [`Self::whole_loop_test`]), taken out: one statement placed before the loop that declares
    /// their flags, computing them in a block with the loop's `__start`, `__end` and `__step`
    /// (type `t`, values `s`, `e`, `st`). The tests later loops may reuse are recorded in the
    /// loop's statement sequence.
    pub(super) fn take_loop_tests(&mut self, var: LocalId, (t, s, e, st): (&TokenStream, &TokenStream, &TokenStream, &TokenStream)) -> TokenStream {
        let all = &mut self.loop_tests;
        let (mine, rest): (Vec<_>, Vec<_>) = all.drain(..).partition(|lt| lt.var == var);
        *all = rest;
        if mine.is_empty() {
            return TokenStream::new();
        }
        if let Some(frame) = self.loop_frames.get(&var).and_then(|f| self.test_frames.get_mut(*f)) {
            for lt in &mine {
                if let Some(key) = &lt.key {
                    frame.push(SharedTest { key: key.clone(), flags: lt.flags.clone() });
                }
            }
        }
        let flags: Vec<&Ident> = mine.iter().flat_map(|lt| &lt.flags).collect();
        let flags_ty = flags.iter().map(|_| quote!(bool));
        let code = mine.iter().map(|lt| &lt.code);
        quote! {
            let (#(#flags,)*): (#(#flags_ty,)*) = {
                let __start: #t = #s;
                let __end: #t = #e;
                let __step: #t = #st;
                #(#code)*
                (#(#flags,)*)
            };
        }
    }
}

/// `ts` with every identifier `from` (at any depth) replaced by `to`.
fn renamed(ts: TokenStream, from: &Ident, to: &Ident) -> TokenStream {
    ts.into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) if i == *from => proc_macro2::TokenTree::Ident(to.clone()),
            proc_macro2::TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), renamed(g.stream(), from, to));
                ng.set_span(g.span());
                proc_macro2::TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

/// The start, end, step and body of the `for` loop over `var` in `stmts` (at any depth).
fn find_loop(stmts: &[Stmt], var: LocalId) -> Option<(ExprId, ExprId, ExprId, &[Stmt])> {
    for s in stmts {
        if let Stmt::For { var: v, start, end, step, body, .. } = s {
            if *v == var {
                return Some((*start, *end, *step, body));
            }
        }
        if let Some(found) = s.bodies().into_iter().find_map(|b| find_loop(b, var)) {
            return Some(found);
        }
    }
    None
}
