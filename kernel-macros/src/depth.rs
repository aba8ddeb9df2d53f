//! The nesting limit: a proc macro runs on rustc's thread, with a limited stack, and every
//! later stage (lowering, checking, the backends, the generated Rust) recurses over
//! expressions. Before anything else reads a body, `limit_block` replaces each statement whose
//! expressions nest deeper than `MAX_DEPTH` by a marker that lowering reports as an error at
//! the statement's expression. The walk recurses at most `MAX_DEPTH` levels; what lies deeper
//! is measured and dropped with explicit stacks.

use crate::diag::{Sp, SpanRange};
use proc_macro2::{Ident, Literal, Span, TokenStream, TokenTree};
use syn::visit_mut::VisitMut;

/// The deepest expression nesting accepted: in a body's syntax (operators, calls, blocks and
/// control flow all count), in lowering's recursion and in a lowered expression, where an
/// inlined helper's result nests inside its caller's expression. It bounds the recursion of
/// every stage; at this depth the largest frames (the CPU backend's, about 12 KiB per level in
/// a debug build) need 3 MiB of rustc's 8 MiB stack.
pub const MAX_DEPTH: usize = 256;

/// The error for an expression nested more than `MAX_DEPTH` levels deep once the helpers of
/// `chain` (the calls being inlined, outermost first) are inlined.
pub fn inlined_depth_message(chain: &[String]) -> String {
    if chain.is_empty() {
        return format!("this expression is nested too deeply (more than {MAX_DEPTH} levels once converted): split it with `let`");
    }
    let chain = chain.join(" -> ");
    format!("this expression is nested too deeply once the helpers {chain} are inlined (more than {MAX_DEPTH} levels): split it, or the helpers' results, with `let`")
}

const MARKER: &str = "__kernel_nested_too_deep";

/// Replaces every statement of `block` that nests deeper than `MAX_DEPTH` by a marker.
pub fn limit_block(block: &mut syn::Block) {
    let mut v = Limiter { depth: 0, pending: None };
    v.visit_block_mut(block);
}

/// The error for a marker left by `limit_block`: its span and message.
pub fn marker_error(tokens: &TokenStream) -> Option<(Sp, String)> {
    let mut tokens = tokens.clone().into_iter();
    let (Some(TokenTree::Ident(id)), Some(TokenTree::Literal(n)), None) = (tokens.next(), tokens.next(), tokens.next()) else {
        return None;
    };
    if id != MARKER {
        return None;
    }
    let msg = format!("this expression is nested too deeply ({n} levels; the limit is {MAX_DEPTH}): split it with `let`");
    Some((Sp { start: id.span(), end: n.span() }, msg))
}

/// The depth of expressions measured so far, and the deepest nesting found below the current
/// statement that no inner statement has taken.
struct Limiter {
    depth: usize,
    pending: Option<usize>,
}

impl VisitMut for Limiter {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let n = self.depth - 1 + measure(e);
            self.pending = Some(self.pending.map_or(n, |p| p.max(n)));
        } else {
            syn::visit_mut::visit_expr_mut(self, e);
        }
        self.depth -= 1;
    }

    fn visit_stmt_mut(&mut self, s: &mut syn::Stmt) {
        let outer = self.pending.take();
        syn::visit_mut::visit_stmt_mut(self, s);
        if let Some(n) = self.pending.take() {
            let target = match s {
                syn::Stmt::Local(syn::Local { init: Some(init), .. }) => Some(&mut *init.expr),
                syn::Stmt::Expr(e, _) => Some(e),
                _ => None,
            };
            match target {
                Some(e) => replace_with_marker(e, n),
                None => {
                    // An item or macro statement: the whole statement becomes the marker.
                    let mut marker = syn::Expr::Verbatim(TokenStream::new());
                    let (start, end) = stmt_spans(s);
                    set_marker(&mut marker, start, end, n);
                    std::mem::forget(std::mem::replace(s, syn::Stmt::Expr(marker, Some(Default::default()))));
                }
            }
        }
        self.pending = match (outer, self.pending) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}

fn replace_with_marker(e: &mut syn::Expr, depth: usize) {
    let (start, end) = (first_span(e), last_span(e));
    let mut marker = syn::Expr::Verbatim(TokenStream::new());
    set_marker(&mut marker, start, end, depth);
    drop_iteratively(std::mem::replace(e, marker));
}

/// The first and last token of an item or macro statement, found without printing it.
fn stmt_spans(s: &syn::Stmt) -> (Span, Span) {
    match s {
        syn::Stmt::Item(syn::Item::Const(c)) => (c.const_token.span, c.semi_token.span),
        syn::Stmt::Item(syn::Item::Static(c)) => (c.static_token.span, c.semi_token.span),
        syn::Stmt::Item(syn::Item::Fn(f)) => (f.sig.fn_token.span, f.block.brace_token.span.close()),
        syn::Stmt::Macro(m) => (m.mac.path.sp().start, m.mac.delimiter.span().close()),
        _ => (Span::call_site(), Span::call_site()),
    }
}

/// Makes `e` the marker of a `depth`-deep expression from `start` to `end`.
fn set_marker(e: &mut syn::Expr, start: Span, end: Span, depth: usize) {
    let id = Ident::new(MARKER, start);
    let mut n = Literal::usize_unsuffixed(depth);
    n.set_span(end);
    *e = syn::Expr::Verbatim([TokenTree::Ident(id), TokenTree::Literal(n)].into_iter().collect());
}

/// The nesting depth of `e` (1 for a leaf), following the children that `children` knows.
fn measure(e: &syn::Expr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        stack.extend(children(e).into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

/// The sub-expressions of the forms that chain without bound in practice (operators, calls,
/// methods, parentheses); other forms count as leaves.
fn children(e: &syn::Expr) -> Vec<&syn::Expr> {
    use syn::Expr::*;
    match e {
        Binary(b) => vec![&b.left, &b.right],
        Unary(u) => vec![&u.expr],
        Paren(p) => vec![&p.expr],
        Group(g) => vec![&g.expr],
        Cast(c) => vec![&c.expr],
        Reference(r) => vec![&r.expr],
        Field(f) => vec![&f.base],
        Index(i) => vec![&i.expr, &i.index],
        Assign(a) => vec![&a.left, &a.right],
        Call(c) => std::iter::once(&*c.func).chain(c.args.iter()).collect(),
        MethodCall(m) => std::iter::once(&*m.receiver).chain(m.args.iter()).collect(),
        Array(a) => a.elems.iter().collect(),
        Tuple(t) => t.elems.iter().collect(),
        _ => vec![],
    }
}

/// Takes the children of the forms `children` knows out of `e`, leaving empty placeholders.
fn take_children(e: &mut syn::Expr) -> Vec<syn::Expr> {
    use syn::Expr::*;
    let take = |b: &mut syn::Expr| std::mem::replace(b, syn::Expr::Verbatim(TokenStream::new()));
    let take_all = |p: &mut syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>| std::mem::take(p).into_iter().collect::<Vec<_>>();
    match e {
        Binary(b) => vec![take(&mut b.left), take(&mut b.right)],
        Unary(u) => vec![take(&mut u.expr)],
        Paren(p) => vec![take(&mut p.expr)],
        Group(g) => vec![take(&mut g.expr)],
        Cast(c) => vec![take(&mut c.expr)],
        Reference(r) => vec![take(&mut r.expr)],
        Field(f) => vec![take(&mut f.base)],
        Index(i) => vec![take(&mut i.expr), take(&mut i.index)],
        Assign(a) => vec![take(&mut a.left), take(&mut a.right)],
        Call(c) => std::iter::once(take(&mut c.func)).chain(take_all(&mut c.args)).collect(),
        MethodCall(m) => std::iter::once(take(&mut m.receiver)).chain(take_all(&mut m.args)).collect(),
        Array(a) => take_all(&mut a.elems),
        Tuple(t) => take_all(&mut t.elems),
        _ => vec![],
    }
}

/// Drops a deep expression without recursing through the forms `children` knows (the
/// compiler-generated drop would recurse once per level).
fn drop_iteratively(e: syn::Expr) {
    let mut stack = vec![e];
    while let Some(mut e) = stack.pop() {
        stack.extend(take_children(&mut e));
    }
}

/// The span of the first token of `e`, found without printing `e`.
fn first_span(mut e: &syn::Expr) -> Span {
    use syn::Expr::*;
    loop {
        e = match e {
            Binary(b) => &b.left,
            Cast(c) => &c.expr,
            Field(f) => &f.base,
            Index(i) => &i.expr,
            Assign(a) => &a.left,
            Call(c) => &c.func,
            MethodCall(m) => &m.receiver,
            Range(syn::ExprRange { start: Some(s), .. }) => s,
            Paren(p) => return p.paren_token.span.open(),
            Unary(u) => return u.op.sp().start,
            Reference(r) => return r.and_token.span,
            Array(a) => return a.bracket_token.span.open(),
            Tuple(t) => return t.paren_token.span.open(),
            Block(b) if b.label.is_none() => return b.block.brace_token.span.open(),
            other => return other.sp().start,
        };
    }
}

/// The span of the last token of `e`, found without printing `e`.
fn last_span(mut e: &syn::Expr) -> Span {
    use syn::Expr::*;
    loop {
        e = match e {
            Binary(b) => &b.right,
            Unary(u) => &u.expr,
            Reference(r) => &r.expr,
            Assign(a) => &a.right,
            Range(syn::ExprRange { end: Some(x), .. }) => x,
            Return(syn::ExprReturn { expr: Some(x), .. }) => x,
            Cast(c) => return c.ty.sp().end,
            Call(c) => return c.paren_token.span.close(),
            MethodCall(m) => return m.paren_token.span.close(),
            Paren(p) => return p.paren_token.span.close(),
            Index(i) => return i.bracket_token.span.close(),
            Array(a) => return a.bracket_token.span.close(),
            Tuple(t) => return t.paren_token.span.close(),
            Block(b) => return b.block.brace_token.span.close(),
            ForLoop(f) => return f.body.brace_token.span.close(),
            While(w) => return w.body.brace_token.span.close(),
            Loop(l) => return l.body.brace_token.span.close(),
            If(i) => match &i.else_branch {
                Some((_, els)) => els,
                None => return i.then_branch.brace_token.span.close(),
            },
            other => return other.sp().end,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel_with(expr: &str) -> String {
        format!("fn k(x: Ptr<f32>, out: Ptr<f32>) {{ let offs = arange(0, 16); let v = load(x + offs); let y = {expr}; store(out + offs, y); }}")
    }

    fn expand(src: &str) -> String {
        let f: syn::ItemFn = syn::parse_str(src).expect("parses");
        crate::expand_kernel_fn(TokenStream::new(), f).to_string()
    }

    #[test]
    fn ten_thousand_terms_give_the_nesting_error() {
        let out = expand(&kernel_with(&vec!["v"; 10_000].join(" + ")));
        assert!(out.contains("nested too deeply (10000 levels; the limit is 256)"), "{out}");
    }

    #[test]
    fn ten_thousand_nested_calls_give_the_nesting_error() {
        // syn's parser recurses on nested calls: parse on a large stack.
        let expr = format!("{}v{}", "exp(".repeat(10_000), ")".repeat(10_000));
        let out = std::thread::Builder::new().stack_size(64 << 20).spawn(move || expand(&kernel_with(&expr))).expect("thread").join();
        let out = out.expect("expands without panicking");
        assert!(out.contains("nested too deeply (10001 levels; the limit is 256)"), "{out}");
    }

    #[test]
    fn deep_items_in_a_body_give_the_nesting_error() {
        let src = format!("fn k(x: Ptr<f32>) {{ const N: i32 = {}; }}", vec!["1"; 10_000].join(" + "));
        let out = expand(&src);
        assert!(out.contains("nested too deeply (10000 levels; the limit is 256)"), "{out}");
    }

    #[test]
    fn expressions_at_the_limit_expand() {
        let out = expand(&kernel_with(&vec!["v"; MAX_DEPTH - 4].join(" + ")));
        assert!(!out.contains("compile_error"), "{out}");
    }
}
