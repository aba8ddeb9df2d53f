//! The version of a loop's body for the iterations where its `where_` conditions hold on the
//! whole block (the plan's `Schedule::AsWritten::uniform`, `plan/uniform.rs`): each condition is
//! tested at the block's corners at the top of the iteration, and the body runs either with
//! every such `where_` replaced by its first value or as written.

use super::*;

impl DevGen<'_> {
    /// The body of the loop over `var` (its statements starting at shared-memory floor `floor`):
    /// with the plan's uniform conditions, `if <they hold on the whole block> { body without them }
    /// else { body }`.
    pub(super) fn loop_body(&mut self, var: LocalId, body: &[Stmt], floor: usize) -> TokenStream {
        let conds = match self.p.loops.get(&var) {
            Some(Schedule::AsWritten { uniform, .. }) => uniform.clone(),
            _ => Vec::new(),
        };
        if conds.is_empty() {
            return self.stmts(body);
        }
        let tests: Vec<TokenStream> = conds.iter().map(|&c| self.all_true(c)).collect();
        self.assume.extend(conds.iter().copied());
        let whole = self.stmts(body);
        for c in &conds {
            self.assume.remove(c);
        }
        self.smem.restore_floor(floor);
        self.smem.clear();
        let general = self.stmts(body);
        quote! {
            if true #(&& #tests)* {
                #whole
            } else {
                #general
            }
        }
    }

    /// Code (a `bool`, the same in every thread) that is `true` only if boolean `c` holds on
    /// every element of its block ([`DevicePlan::block_testable`]): a comparison of affine
    /// blocks is tested at each corner of its block, `&` and `|` combine their (testable)
    /// sides' tests.
    fn all_true(&mut self, c: ExprId) -> TokenStream {
        let k = self.k;
        if self.shapes[c].is_empty() {
            let v = self.ev(c, &At::Own);
            return quote!((#v));
        }
        match &k.exprs[c].kind {
            ExprKind::Binary(BinOp::And, a, b) => {
                let (ta, tb) = (self.all_true(*a), self.all_true(*b));
                quote!((#ta && #tb))
            }
            // Either side that can be tested.
            ExprKind::Binary(BinOp::Or, a, b) => {
                let testable: Vec<ExprId> = [*a, *b].into_iter().filter(|&x| self.block_testable(x)).collect();
                let sides: Vec<TokenStream> = testable.into_iter().map(|x| self.all_true(x)).collect();
                quote!((false #(|| #sides)*))
            }
            ExprKind::ExpandDims(x, _) | ExprKind::BroadcastTo(x) => self.all_true(*x),
            ExprKind::Local(l) => match self.kinds[*l] {
                LocalKind::Pure(v) => self.all_true(v),
                _ => quote!(false),
            },
            _ => {
                // The flat index of each corner: every axis at its first or last index.
                let shape = self.shapes[c].clone();
                let corners = (0..1usize << shape.len()).map(|bits| {
                    shape.iter().enumerate().fold(0usize, |flat, (i, &n)| flat * n + if bits >> i & 1 == 1 { n - 1 } else { 0 })
                });
                let vals: Vec<TokenStream> = corners.map(|f| self.ev(c, &At::Flat(quote!(#f)))).collect();
                quote!((true #(&& #vals)*))
            }
        }
    }
}
