//! Mutations of an input: token-level (tokens deleted, duplicated, swapped, replaced from the
//! dictionaries or other seeds, groups re-delimited, attribute contents changed) and
//! syntax-level (expressions wrapped or replaced, statements deleted, duplicated, swapped,
//! reversed or generated).

use super::grammar::{Gen, Scope};
use super::vocab::*;
use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use quote::quote;
use std::str::FromStr;
use syn::visit_mut::VisitMut;

#[derive(Clone)]
pub(super) enum Tok {
    Leaf(TokenTree),
    Group(Delimiter, Vec<Tok>),
}

pub(super) fn toks(ts: TokenStream) -> Vec<Tok> {
    ts.into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => Tok::Group(g.delimiter(), toks(g.stream())),
            other => Tok::Leaf(other),
        })
        .collect()
}

pub(super) fn stream(v: &[Tok]) -> TokenStream {
    v.iter()
        .map(|t| match t {
            Tok::Leaf(l) => l.clone(),
            Tok::Group(d, inner) => TokenTree::Group(Group::new(*d, stream(inner))),
        })
        .collect()
}

pub(super) fn parse_toks(s: &str) -> Vec<Tok> {
    TokenStream::from_str(s).map(toks).unwrap_or_default()
}

/// Paths (indices of nested groups) of every token list: the root and each group's contents.
/// `in_attr` restricts to the contents of `#[...]` attributes.
pub(super) fn lists(v: &[Tok], path: &mut Vec<usize>, in_attr: bool, only_attrs: bool, out: &mut Vec<Vec<usize>>) {
    if in_attr || !only_attrs {
        out.push(path.clone());
    }
    for (i, t) in v.iter().enumerate() {
        if let Tok::Group(d, inner) = t {
            let is_attr = *d == Delimiter::Bracket
                && i > 0
                && matches!(&v[i - 1], Tok::Leaf(TokenTree::Punct(p)) if p.as_char() == '#');
            path.push(i);
            lists(inner, path, in_attr || is_attr, only_attrs, out);
            path.pop();
        }
    }
}

pub(super) fn list_at<'a>(v: &'a mut Vec<Tok>, path: &[usize]) -> &'a mut Vec<Tok> {
    match path.split_first() {
        None => v,
        Some((i, rest)) => match &mut v[*i] {
            Tok::Group(_, inner) => list_at(inner, rest),
            Tok::Leaf(_) => unreachable!("paths only lead through groups"),
        },
    }
}

/// Every leaf of one kind (`'i'` idents, `'l'` literals, `'p'` puncts), as (list path, index).
pub(super) fn leaves(v: &[Tok], path: &mut Vec<usize>, kind: char, out: &mut Vec<(Vec<usize>, usize)>) {
    for (i, t) in v.iter().enumerate() {
        match t {
            Tok::Group(_, inner) => {
                path.push(i);
                leaves(inner, path, kind, out);
                path.pop();
            }
            Tok::Leaf(l) => {
                let k = match l {
                    TokenTree::Ident(_) => 'i',
                    TokenTree::Literal(_) => 'l',
                    _ => 'p',
                };
                if k == kind {
                    out.push((path.clone(), i));
                }
            }
        }
    }
}

pub(super) fn idents_of(v: &[Tok], out: &mut Vec<String>) {
    for t in v {
        match t {
            Tok::Group(_, inner) => idents_of(inner, out),
            Tok::Leaf(TokenTree::Ident(i)) => {
                let s = i.to_string();
                if !out.contains(&s) {
                    out.push(s);
                }
            }
            _ => {}
        }
    }
}

pub(super) fn random_ident(rng: &mut Rng, names: &[String]) -> String {
    match rng.below(10) {
        0..=3 if !names.is_empty() => rng.pick(names).clone(),
        0..=4 => rng.pick(BUILTINS).to_string(),
        5 | 6 => rng.pick(DTYPES).to_string(),
        7 => rng.pick(KEYWORDS).to_string(),
        _ => rng.pick(WORDS).to_string(),
    }
}

pub(super) fn random_token_text(rng: &mut Rng, names: &[String]) -> String {
    match rng.below(6) {
        0..=2 => random_ident(rng, names),
        3 => rng.pick(LITERALS).to_string(),
        4 => rng.pick(PUNCTS).to_string(),
        _ => rng.pick(EXTREME_INTS).to_string(),
    }
}

/// One token-level mutation of `root`. `attrs_only` confines it to attribute contents.
pub(super) fn mutate_tokens(rng: &mut Rng, root: &mut Vec<Tok>, names: &[String], donors: &[&str], attrs_only: bool) {
    // Targeted leaf replacements pick among all leaves of a kind.
    if !attrs_only && rng.chance(35) {
        let kind = *rng.pick(&['i', 'i', 'l', 'l', 'p']);
        let mut found = Vec::new();
        leaves(root, &mut vec![], kind, &mut found);
        if !found.is_empty() {
            let (path, i) = rng.pick(&found).clone();
            let text = match kind {
                'i' => random_ident(rng, names),
                'l' => match rng.below(3) {
                    0 => rng.pick(EXTREME_INTS).to_string(),
                    1 => rng.pick(EXTREME_FLOATS).to_string(),
                    _ => rng.pick(LITERALS).to_string(),
                },
                _ => rng.pick(PUNCTS).to_string(),
            };
            let list = list_at(root, &path);
            list.splice(i..i + 1, parse_toks(&text));
            return;
        }
    }
    let mut all = Vec::new();
    lists(root, &mut vec![], false, attrs_only, &mut all);
    if all.is_empty() {
        return;
    }
    let path = rng.pick(&all).clone();
    let op = rng.below(if attrs_only { 9 } else { 12 });
    // Text of a random donor run (from another seed), computed before borrowing the list.
    let donor = if op == 9 && !donors.is_empty() {
        let d = parse_toks(donors[rng.below(donors.len())]);
        let mut dl = Vec::new();
        lists(&d, &mut vec![], false, false, &mut dl);
        let mut d = d;
        let p = rng.pick(&dl).clone();
        let src = list_at(&mut d, &p);
        let start = rng.below(src.len());
        let end = (start + 1 + rng.below(8)).min(src.len());
        src.get(start..end).map(|s| s.to_vec()).unwrap_or_default()
    } else {
        vec![]
    };
    let generated = if op == 11 { Gen::new(rng, Scope::from_names(names)).any(2) } else { String::new() };
    let list = list_at(root, &path);
    let n = list.len();
    let i = rng.below(n.max(1));
    match op {
        // Delete a run of tokens.
        0 if n > 0 => {
            let len = 1 + rng.below(3);
            list.drain(i..(i + len).min(n));
        }
        // Duplicate a run of tokens.
        1 if n > 0 => {
            let len = 1 + rng.below(4);
            let run: Vec<Tok> = list[i..(i + len).min(n)].to_vec();
            let at = (i + len).min(n);
            list.splice(at..at, run);
        }
        // Swap two tokens.
        2 if n > 1 => {
            let j = rng.below(n);
            list.swap(i, j);
        }
        // Replace a token.
        3 | 4 if n > 0 => {
            let text = if attrs_only { rng.pick(ATTR_VALUES).to_string() } else { random_token_text(rng, names) };
            list.splice(i..i + 1, parse_toks(&text));
        }
        // Insert a token.
        5 => {
            let text = if attrs_only { rng.pick(ATTR_VALUES).to_string() } else { random_token_text(rng, names) };
            list.splice(i..i, parse_toks(&text));
        }
        // Wrap a token (often a whole parenthesized expression or a name).
        6 if n > 0 => {
            let x = stream(&list[i..i + 1]).to_string();
            let w = rng.pick(WRAPPERS).replace("{x}", &x);
            list.splice(i..i + 1, parse_toks(&w));
        }
        // Change a group's delimiter, or empty it.
        7 if n > 0 => {
            if let Tok::Group(d, inner) = &mut list[i] {
                if rng.chance(30) {
                    inner.clear();
                } else {
                    *d = *rng.pick(&[Delimiter::Parenthesis, Delimiter::Bracket, Delimiter::Brace]);
                }
            }
        }
        // Truncate the list.
        8 if n > 0 => list.truncate(i),
        // Splice in a run of tokens from another seed.
        9 => {
            list.splice(i..i, donor);
        }
        // Move a token to another position.
        10 if n > 1 => {
            let t = list.remove(i);
            let j = rng.below(list.len() + 1);
            list.insert(j, t);
        }
        // Replace a token by a generated expression.
        11 if n > 0 => {
            list.splice(i..i + 1, parse_toks(&generated));
        }
        _ => {}
    }
}

// syntax-level mutation

/// Counts expressions (pre-order), or replaces the `target`-th one.
pub(super) struct ExprAt<'f> {
    target: usize,
    seen: usize,
    replace: Option<Box<dyn FnOnce(&syn::Expr) -> Option<syn::Expr> + 'f>>,
}

impl VisitMut for ExprAt<'_> {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if self.replace.is_none() {
            return;
        }
        if self.seen == self.target {
            if let Some(f) = self.replace.take() {
                if let Some(new) = f(e) {
                    *e = new;
                }
            }
            return;
        }
        self.seen += 1;
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

pub(super) struct CountExprs(usize, Vec<String>);

impl VisitMut for CountExprs {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        self.0 += 1;
        if self.1.len() < 64 {
            self.1.push(quote!(#e).to_string());
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Edits the statements of the `target`-th block.
pub(super) struct BlockAt<'f> {
    target: usize,
    seen: usize,
    edit: Option<Box<dyn FnOnce(&mut Vec<syn::Stmt>) + 'f>>,
}

impl VisitMut for BlockAt<'_> {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        if self.edit.is_none() {
            return;
        }
        if self.seen == self.target {
            if let Some(f) = self.edit.take() {
                f(&mut b.stmts);
            }
            return;
        }
        self.seen += 1;
        syn::visit_mut::visit_block_mut(self, b);
    }
}

pub(super) struct CountBlocks(usize);

impl VisitMut for CountBlocks {
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.0 += 1;
        syn::visit_mut::visit_block_mut(self, b);
    }
}

pub(super) fn parse_stmts(s: &str) -> Vec<syn::Stmt> {
    syn::parse_str::<syn::Block>(&format!("{{ {s} }}")).map(|b| b.stmts).unwrap_or_default()
}

/// One syntax-level mutation: wraps or replaces an expression, or edits a block's statements.
pub(super) fn mutate_syntax(rng: &mut Rng, src: &str) -> Option<String> {
    let mut file: syn::File = syn::parse_str(src).ok()?;
    let scope = Scope::from_file(&mut file);
    if rng.chance(55) {
        let mut c = CountExprs(0, vec![]);
        c.visit_file_mut(&mut file);
        if c.0 == 0 {
            return None;
        }
        let target = rng.below(c.0);
        let choice = rng.below(10);
        let wrapper = rng.pick(WRAPPERS).to_string();
        let other = rng.pick(&c.1).clone();
        let generated = Gen::new(rng, scope).any(3);
        let replace: Box<dyn FnOnce(&syn::Expr) -> Option<syn::Expr>> = Box::new(move |e: &syn::Expr| {
            let text = match choice {
                0..=4 => wrapper.replace("{x}", &quote!(#e).to_string()),
                5 | 6 => other,
                _ => generated,
            };
            syn::parse_str::<syn::Expr>(&text).ok()
        });
        let mut v = ExprAt { target, seen: 0, replace: Some(replace) };
        v.visit_file_mut(&mut file);
    } else {
        let mut c = CountBlocks(0);
        c.visit_file_mut(&mut file);
        if c.0 == 0 {
            return None;
        }
        let target = rng.below(c.0);
        let op = rng.below(6);
        let (a, b) = (rng.next() as usize, rng.next() as usize);
        let mut g = Gen::new(rng, scope);
        let n = 1 + g.rng.below(3);
        let new_stmts = parse_stmts(&g.stmts(n, 2));
        let edit: Box<dyn FnOnce(&mut Vec<syn::Stmt>)> = Box::new(move |stmts: &mut Vec<syn::Stmt>| {
            let len = stmts.len();
            match op {
                0 if len > 0 => {
                    stmts.remove(a % len);
                }
                1 if len > 0 => {
                    let s = stmts[a % len].clone();
                    stmts.insert(b % (len + 1), s);
                }
                2 if len > 1 => stmts.swap(a % len, b % len),
                3 if len > 0 => {
                    // Reverse a run: moves uses before definitions.
                    let (x, y) = (a % len, b % len);
                    let (x, y) = (x.min(y), x.max(y));
                    stmts[x..=y].reverse();
                }
                _ => {
                    let at = a % (len + 1);
                    for (k, s) in new_stmts.into_iter().enumerate() {
                        stmts.insert(at + k, s);
                    }
                }
            }
        });
        let mut v = BlockAt { target, seen: 0, edit: Some(edit) };
        v.visit_file_mut(&mut file);
    }
    Some(quote!(#file).to_string())
}
