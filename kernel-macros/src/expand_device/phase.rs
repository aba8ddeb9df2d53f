//! Phases: the loops over a thread's register slots in which elementwise code runs, the
//! shared-memory copies of values they read at other threads' coordinates, and the hoisting of
//! `dot`s and reductions before the statement that uses them.

use super::*;

impl DevGen<'_> {
    /// A loop over the owned elements of a block of `numel` elements in the cyclic layout.
    pub(super) fn phase(&mut self, numel: usize, body: impl FnOnce(&mut Self) -> TokenStream) -> TokenStream {
        self.phase_in(numel, Layout::Cyclic, body)
    }

    /// Code running `body` for each element this thread owns in `layout`; `body` is generated
    /// once with that iteration context (`__j` = register slot, `__f` = flat index). Values
    /// it reads at other threads' coordinates are staged in shared memory first.
    pub(super) fn phase_in(&mut self, numel: usize, layout: Layout, body: impl FnOnce(&mut Self) -> TokenStream) -> TokenStream {
        let scope = self.enter_iteration(numel, layout);
        let b = body(self);
        let staged = self.leave_iteration(scope);
        let (pre, post) = self.staging(&staged);
        let main = self.for_each_slot(numel, layout, b);
        quote! {
            #pre
            #main
            #post
        }
    }

    /// Enters the iteration context element code is generated in (`numel` elements in `layout`;
    /// `numel = 0` for code at explicit flat indices), with no staged values yet.
    pub(super) fn enter_iteration(&mut self, numel: usize, layout: Layout) -> IterScope {
        IterScope { numel: std::mem::replace(&mut self.iter_numel, numel), layout: std::mem::replace(&mut self.iter_layout, layout), staged: std::mem::take(&mut self.staged) }
    }

    /// Restores the outer iteration context; returns the values the code generated inside read
    /// at other threads' coordinates (to stage in shared memory).
    pub(super) fn leave_iteration(&mut self, scope: IterScope) -> Vec<(MatVar, usize)> {
        self.iter_numel = scope.numel;
        self.iter_layout = scope.layout;
        std::mem::replace(&mut self.staged, scope.staged)
    }

    /// Code before and after a phase that reads `staged` values: each is copied to its shared
    /// memory slot by its owners, between barriers.
    pub(super) fn staging(&self, staged: &[(MatVar, usize)]) -> (TokenStream, TokenStream) {
        if staged.is_empty() {
            return (quote!(), quote!());
        }
        let d = &self.p.d;
        let stage_code = staged.iter().map(|(m, off)| {
            let (id, e) = (&m.ident, &m.elem);
            let st = quote!(#d::store((__smem.add(#off) as *mut #e).add(__f), #id[__j]););
            self.for_each_slot(m.numel, m.layout, st)
        });
        (quote!(#(#stage_code)* #d::bar_sync();), quote!(#d::bar_sync();))
    }

    /// `body` for every register slot of this thread, unrolled in the `mma` layout (so accumulator
    /// arrays stay in registers) and in the cyclic layout as [`Self::slot_loop`] decides.
    pub(super) fn for_each_slot(&self, numel: usize, layout: Layout, body: TokenStream) -> TokenStream {
        match layout {
            Layout::Cyclic if self.vec_width(numel) > 1 => {
                let (threads, v) = (self.threads, self.vec_width(numel));
                let chunks = self.per_thread(numel) / v;
                // Every chunk is whole and in range (see `vec_width`).
                let copies = self.unrolled(v, quote!(__v), quote!(let __j: usize = __jc * #v + __v; let __f: usize = __f0 + __v; #body));
                self.slot_loop(chunks, quote!(__jc), quote! {
                    let __f0: usize = (__jc * #threads + __tid) * #v;
                    #copies
                })
            }
            Layout::Cyclic => {
                let threads = self.threads;
                let pt = self.per_thread(numel);
                self.slot_loop(pt, quote!(__j), quote! {
                    let __f = __tid + __j * #threads;
                    if __f < #numel { #body }
                })
            }
            Layout::Mma { .. } => {
                let f = Self::mma_flat_at(layout, &quote!(__j));
                self.unrolled(self.slots(numel, layout), quote!(__j), quote!(let __f: usize = #f; #body))
            }
            Layout::MmaRows { .. } => {
                let bits = self.bit_layout(numel, layout).expect("row layouts have power-of-two tiles");
                let f = bits.flat_at(&quote!(__j));
                self.unrolled(self.slots(numel, layout), quote!(__j), quote!(let __f: usize = #f; #body))
            }
        }
    }

    /// Computes every `dot` and reduction inside `root` (innermost first) into temporaries.
    pub(super) fn hoist(&mut self, root: ExprId, out: &mut TokenStream) {
        let k = self.k;
        for c in k.exprs[root].kind.operands() {
            self.hoist(c, out);
        }
        match &k.exprs[root].kind {
            ExprKind::Dot { a, b, acc } => out.extend(self.gen_dot(root, *a, *b, *acc)),
            ExprKind::Reduce { op, x, axis } => out.extend(self.gen_reduce(root, *op, *x, *axis)),
            ExprKind::Scan { op, x, axis, reverse } => out.extend(self.gen_scan(root, *op, *x, *axis, *reverse)),
            ExprKind::ReduceWith { x, axis, f } => out.extend(self.gen_reduce_with(root, *x, *axis, *f)),
            _ => {}
        }
    }
}
