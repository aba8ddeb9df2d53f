//! Recovery after an error in a kernel's attributes or signature: the body is still lowered and
//! checked, without the statements that use a name whose binding is missing or wrong (an
//! unsupported parameter, say). Their errors would follow from the first one, so they are not
//! reported; every other statement is checked as usual.
//!
//! A statement that is left out makes the names it binds or assigns unusable too, up to a
//! fixed point, so a value computed from an unusable name is never lowered either. The
//! analysis reads tokens: it may leave out more than needed, never less.

use proc_macro2::{Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::HashSet;
use syn::{Block, Expr, Stmt};

/// Every identifier in a syntax node, keywords included.
pub fn idents(node: &impl ToTokens) -> Vec<String> {
    let mut out = Vec::new();
    collect_idents(node.to_token_stream(), &mut out);
    out
}

fn collect_idents(ts: TokenStream, out: &mut Vec<String>) {
    for t in ts {
        match t {
            TokenTree::Ident(i) => out.push(i.to_string()),
            TokenTree::Group(g) => collect_idents(g.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

/// The body without the statements that use one of `unusable` (directly or through a local
/// computed from one).
pub fn filter_body(block: &Block, unusable: &[String]) -> Block {
    let mut names: HashSet<String> = unusable.iter().cloned().collect();
    loop {
        let before = names.len();
        let out = filter_block(block, &mut names);
        if names.len() == before {
            return out;
        }
    }
}

fn mentions(node: &impl ToTokens, names: &HashSet<String>) -> bool {
    !names.is_empty() && idents(node).iter().any(|n| names.contains(n))
}

fn filter_block(b: &Block, names: &mut HashSet<String>) -> Block {
    let stmts = b.stmts.iter().filter_map(|s| filter_stmt(s, names)).collect();
    Block { brace_token: b.brace_token, stmts }
}

fn filter_stmt(s: &Stmt, names: &mut HashSet<String>) -> Option<Stmt> {
    match s {
        Stmt::Expr(e, semi) => filter_expr(e, names).map(|e| Stmt::Expr(e, *semi)),
        Stmt::Local(l) if mentions(s, names) => {
            names.extend(idents(&l.pat));
            names.extend(assigned(s.to_token_stream()));
            None
        }
        // Items and macros are errors of their own, whatever they mention.
        _ => Some(s.clone()),
    }
}

/// A statement expression: loops and `if`s whose header is usable are kept with their bodies
/// filtered; any other expression that mentions an unusable name is left out.
fn filter_expr(e: &Expr, names: &mut HashSet<String>) -> Option<Expr> {
    let out = match e {
        Expr::ForLoop(f) if !mentions(&f.pat, names) && !mentions(&f.expr, names) => {
            let mut f = f.clone();
            f.body = filter_block(&f.body, names);
            Expr::ForLoop(f)
        }
        Expr::While(w) if !mentions(&w.cond, names) => {
            let mut w = w.clone();
            w.body = filter_block(&w.body, names);
            Expr::While(w)
        }
        Expr::Loop(l) => {
            let mut l = l.clone();
            l.body = filter_block(&l.body, names);
            Expr::Loop(l)
        }
        Expr::Block(b) => {
            let mut b = b.clone();
            b.block = filter_block(&b.block, names);
            Expr::Block(b)
        }
        Expr::If(i) if !mentions(&i.cond, names) => Expr::If(filter_if(i, names)),
        _ if mentions(e, names) => {
            names.extend(assigned(e.to_token_stream()));
            return None;
        }
        _ => e.clone(),
    };
    Some(out)
}

fn filter_if(i: &syn::ExprIf, names: &mut HashSet<String>) -> syn::ExprIf {
    let mut i = i.clone();
    i.then_branch = filter_block(&i.then_branch, names);
    if let Some((else_token, alt)) = i.else_branch.take() {
        i.else_branch = filter_expr(&alt, names).map(|alt| (else_token, Box::new(alt)));
    }
    i
}

/// The names assigned in a piece of code: an identifier followed by `=` or a compound
/// assignment (`+=`, `*=`, ...), found at any depth.
fn assigned(ts: TokenStream) -> Vec<String> {
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) => out.extend(assigned(g.stream())),
            TokenTree::Ident(id) if is_assignment(&tokens[i + 1..]) => out.push(id.to_string()),
            _ => {}
        }
    }
    out
}

fn is_assignment(rest: &[TokenTree]) -> bool {
    let punct = |k: usize| match rest.get(k) {
        Some(TokenTree::Punct(p)) => Some((p.as_char(), p.spacing())),
        _ => None,
    };
    match punct(0) {
        Some(('=', Spacing::Alone)) => true,
        Some((c, Spacing::Joint)) if "+-*/%&|^".contains(c) => punct(1) == Some(('=', Spacing::Alone)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filtered(body: &str, unusable: &[&str]) -> String {
        let b: Block = syn::parse_str(body).expect("a block");
        let names: Vec<String> = unusable.iter().map(|s| s.to_string()).collect();
        filter_body(&b, &names).to_token_stream().to_string()
    }

    #[test]
    fn leaves_out_uses_and_what_is_computed_from_them() {
        let out = filtered("{ let a = x + 1; let b = a * 2; let c = y; store(p, b); store(q, c); }", &["x"]);
        assert_eq!(out, "{ let c = y ; store (q , c) ; }");
    }

    #[test]
    fn keeps_loops_with_usable_headers_and_follows_assignments() {
        let out = filtered("{ let mut acc = 0; for k in 0..n { acc += s; let t = k; } store(p, acc); store(p, n); }", &["s"]);
        assert_eq!(out, "{ for k in 0 .. n { let t = k ; } store (p , n) ; }");
    }

    #[test]
    fn comparisons_are_not_assignments() {
        let out = filtered("{ if a <= s { let z = 1; } let w = a == b; store(p, w); }", &["s"]);
        assert_eq!(out, "{ let w = a == b ; store (p , w) ; }");
    }

    #[test]
    fn an_else_branch_with_an_unusable_condition_is_left_out() {
        let out = filtered("{ if a { f(a); } else if s { g(); } }", &["s"]);
        assert_eq!(out, "{ if a { f (a) ; } }");
    }
}
