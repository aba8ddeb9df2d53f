//! Parsing of the kernel attributes: `#[kernel(NAME = [values], num_warps = 4)]` and
//! `#[autotune(configs = [config(BLOCK_M = 128, num_warps = 8, num_stages = 3), ...], key = [M, N])]`.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use crate::diag::{Sp, SpanRange};
use syn::{bracketed, parenthesized, Ident, LitBool, LitInt, Token};

/// A meta-parameter value written in an attribute.
#[derive(Clone, Debug)]
pub enum AttrValue {
    Int(i64, Sp),
    Bool(bool, Sp),
    /// `None`, `Some(helper)` or a bare `helper`.
    Func(Option<Ident>, Sp),
}

impl AttrValue {
    pub fn span(&self) -> Sp {
        match self {
            AttrValue::Int(_, s) | AttrValue::Bool(_, s) | AttrValue::Func(_, s) => *s,
        }
    }
}

impl Parse for AttrValue {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitBool) {
            let b: LitBool = input.parse()?;
            return Ok(AttrValue::Bool(b.value, b.sp()));
        }
        if input.peek(Token![-]) || input.peek(LitInt) {
            let neg = input.parse::<Option<Token![-]>>()?;
            let lit: LitInt = input.parse()?;
            let v: i64 = lit.base10_parse()?;
            let sp = match &neg {
                Some(m) => m.sp().to(lit.sp()),
                None => lit.sp(),
            };
            if let Some((p, _)) = input.cursor().punct().filter(|(p, _)| p.as_char() != ',') {
                return Err(syn::Error::new(p.span(), "meta-parameter values are integer literals, not expressions: write the number"));
            }
            return Ok(AttrValue::Int(if neg.is_some() { -v } else { v }, sp));
        }
        let id: Ident = input.parse().map_err(|e| {
            syn::Error::new(e.span(), "expected a meta-parameter value: an integer, `true`/`false`, `None` or `Some(helper)`")
        })?;
        if id == "None" {
            return Ok(AttrValue::Func(None, id.sp()));
        }
        if id == "Some" {
            let content;
            parenthesized!(content in input);
            let f: Ident = content.parse()?;
            let sp = id.sp().to(f.sp());
            return Ok(AttrValue::Func(Some(f), sp));
        }
        let span = id.sp();
        Ok(AttrValue::Func(Some(id), span))
    }
}

/// `NAME = value` or `NAME = [value, ...]`.
struct Assignment {
    name: Ident,
    values: Vec<AttrValue>,
}

impl Parse for Assignment {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        input.parse::<Token![=]>()?;
        let values = if input.peek(syn::token::Bracket) {
            let content;
            bracketed!(content in input);
            Punctuated::<AttrValue, Token![,]>::parse_terminated(&content)?.into_iter().collect()
        } else {
            vec![input.parse()?]
        };
        Ok(Assignment { name, values })
    }
}

/// `#[kernel(...)]` arguments.
#[derive(Default, Debug)]
pub struct KernelAttr {
    /// Declared values of launch-time meta-parameters: `BLOCK_SIZE = [256, 1024]`.
    pub values: Vec<(Ident, Vec<AttrValue>)>,
    /// `num_warps = 4` or `num_warps = [4, 8]` (one config per value, tuned at launch).
    pub num_warps: Option<Vec<(i64, Sp)>>,
    pub num_stages: Option<Vec<(i64, Sp)>>,
    /// `asserts = false`: the kernel's `device_assert`s are checked at compile time but run on
    /// neither backend (the default, `true`, runs them).
    pub asserts: Option<bool>,
    /// `fp_fusion = false`: products followed by a sum are rounded on their own instead of
    /// contracted into one `fma` (the default, `true`: `contract.rs`).
    pub fp_fusion: Option<bool>,
    /// `maxnreg = 128`: at most that many registers per thread in every entry (Triton's
    /// `maxnreg`; `.maxnreg` in the PTX).
    pub maxnreg: Option<(i64, Sp)>,
}

/// `N` or `[N, M, ...]`: integers.
fn int_list(a: &Assignment) -> syn::Result<Vec<(i64, Sp)>> {
    let ints: Option<Vec<(i64, Sp)>> = a.values.iter().map(|v| if let AttrValue::Int(i, s) = v { Some((*i, *s)) } else { None }).collect();
    match ints {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(syn::Error::new(a.name.span(), format!("`{}` takes an integer or a list of integers, like `{} = [4, 8]`", a.name, a.name))),
    }
}

/// The architecture names of `archs = [sm_90a, ...]` (checked against the device targets later).
fn arch_list(a: &Assignment) -> syn::Result<Vec<Ident>> {
    let names: Option<Vec<Ident>> = a.values.iter().map(|v| if let AttrValue::Func(Some(id), _) = v { Some(id.clone()) } else { None }).collect();
    match names {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(syn::Error::new(a.name.span(), "`archs` takes a list of device architectures, like `archs = [sm_90a]`")),
    }
}

fn single_int(a: &Assignment) -> syn::Result<(i64, Sp)> {
    match a.values.as_slice() {
        [AttrValue::Int(v, s)] => Ok((*v, *s)),
        _ => Err(syn::Error::new(a.name.span(), format!("`{}` takes one integer", a.name))),
    }
}

/// Rule: an attribute names each argument once (a second one would replace the first).
fn check_once(seen: &mut Vec<String>, name: &Ident, fix: &str) -> syn::Result<()> {
    let n = name.to_string();
    if seen.contains(&n) {
        return Err(syn::Error::new(name.span(), format!("`{n}` is given twice: {fix}")));
    }
    seen.push(n);
    Ok(())
}

impl KernelAttr {
    pub fn parse(tokens: TokenStream) -> syn::Result<KernelAttr> {
        let list = Punctuated::<Assignment, Token![,]>::parse_terminated.parse2(tokens)?;
        let mut out = KernelAttr::default();
        let mut seen = Vec::new();
        for a in list {
            let fix = match a.name.to_string().as_str() {
                "num_warps" | "num_stages" | "asserts" | "fp_fusion" | "maxnreg" => "give it once".to_string(),
                n => format!("list all its values once, like `{n} = [a, b]`"),
            };
            check_once(&mut seen, &a.name, &fix)?;
            if a.name == "num_warps" {
                out.num_warps = Some(int_list(&a)?);
            } else if a.name == "num_stages" {
                out.num_stages = Some(int_list(&a)?);
            } else if a.name == "maxnreg" {
                out.maxnreg = Some(single_int(&a)?);
            } else if a.name == "asserts" {
                match a.values.as_slice() {
                    [AttrValue::Bool(b, _)] => out.asserts = Some(*b),
                    _ => return Err(syn::Error::new(a.name.span(), "`asserts` takes `true` or `false`: `#[kernel(asserts = false)]` leaves the kernel's `device_assert`s out")),
                }
            } else if a.name == "fp_fusion" {
                match a.values.as_slice() {
                    [AttrValue::Bool(b, _)] => out.fp_fusion = Some(*b),
                    _ => return Err(syn::Error::new(a.name.span(), "`fp_fusion` takes `true` or `false`: `#[kernel(fp_fusion = false)]` rounds every product on its own instead of contracting `a * b + c` into one `fma`")),
                }
            } else {
                out.values.push((a.name, a.values));
            }
        }
        Ok(out)
    }
}

/// One `config(...)` of an autotune list.
#[derive(Debug)]
pub struct ConfigAttr {
    pub metas: Vec<(Ident, AttrValue)>,
    pub num_warps: (i64, Sp),
    pub num_stages: (i64, Sp),
    /// `archs = [sm_90a]`: the device architectures whose builds have this config's entries
    /// (empty: all of them).
    pub archs: Vec<Ident>,
    /// `maxnreg = 128`: at most that many registers per thread in this config's entries.
    pub maxnreg: Option<(i64, Sp)>,
    pub span: Sp,
}

impl Parse for ConfigAttr {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let kw: Ident = input.parse()?;
        if kw != "config" {
            return Err(syn::Error::new(kw.span(), "expected `config(NAME = value, ..., num_warps = N, num_stages = N)`"));
        }
        let content;
        parenthesized!(content in input);
        let list = Punctuated::<Assignment, Token![,]>::parse_terminated(&content)?;
        let mut c = ConfigAttr { metas: vec![], num_warps: (4, kw.sp()), num_stages: (3, kw.sp()), archs: vec![], maxnreg: None, span: kw.sp() };
        let mut seen = Vec::new();
        for a in list {
            check_once(&mut seen, &a.name, "a config gives one value per meta-parameter")?;
            if a.name == "num_warps" {
                c.num_warps = single_int(&a)?;
            } else if a.name == "num_stages" {
                c.num_stages = single_int(&a)?;
            } else if a.name == "archs" {
                c.archs = arch_list(&a)?;
            } else if a.name == "maxnreg" {
                c.maxnreg = Some(single_int(&a)?);
            } else if a.values.len() == 1 {
                c.metas.push((a.name, a.values[0].clone()));
            } else {
                return Err(syn::Error::new(a.name.span(), "a config gives one value per meta-parameter"));
            }
        }
        Ok(c)
    }
}

/// `#[autotune(configs = [...], key = [...])]` arguments.
#[derive(Debug)]
pub struct AutotuneAttr {
    pub configs: Vec<ConfigAttr>,
    pub key: Vec<Ident>,
}

impl AutotuneAttr {
    pub fn parse(tokens: TokenStream, span: Sp) -> syn::Result<AutotuneAttr> {
        let parser = |input: ParseStream| -> syn::Result<AutotuneAttr> {
            let mut configs = None;
            let mut key = Vec::new();
            let mut seen = Vec::new();
            while !input.is_empty() {
                let name: Ident = input.parse()?;
                check_once(&mut seen, &name, "give it once")?;
                input.parse::<Token![=]>()?;
                let content;
                bracketed!(content in input);
                if name == "configs" {
                    configs = Some(Punctuated::<ConfigAttr, Token![,]>::parse_terminated(&content)?.into_iter().collect());
                } else if name == "key" {
                    key = Punctuated::<Ident, Token![,]>::parse_terminated(&content)?.into_iter().collect();
                } else {
                    return Err(syn::Error::new(name.span(), "unknown autotune argument: expected `configs` or `key`"));
                }
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
            }
            let configs: Vec<ConfigAttr> = configs.ok_or_else(|| syn::Error::new(span.start, "autotune needs `configs = [config(...), ...]`"))?;
            if configs.is_empty() {
                return Err(syn::Error::new(span.start, "autotune needs at least one config"));
            }
            Ok(AutotuneAttr { configs, key })
        };
        parser.parse2(tokens)
    }
}

/// The span of an attribute's path, for errors about the attribute as a whole.
pub fn attr_span(a: &syn::Attribute) -> Sp {
    a.path().sp()
}

/// The meta-parameter names every `config(NAME = ...)` of an autotune attribute assigns, read
/// from the tokens without parsing them, so that they are known even when the attribute has an
/// error (the error stub's `launch` leaves them out of its arguments, as the real one does).
pub fn config_meta_names(tokens: &TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    let mut prev_config = false;
    for t in tokens.clone() {
        if let TokenTree::Group(g) = &t {
            if prev_config && g.delimiter() == Delimiter::Parenthesis {
                assigned_names(g.stream(), &mut out);
            } else {
                out.extend(config_meta_names(&g.stream()));
            }
        }
        prev_config = matches!(&t, TokenTree::Ident(i) if i.to_string().eq_ignore_ascii_case("config"));
    }
    out.sort();
    out.dedup();
    out
}

/// The `NAME` of each top-level `NAME = ...` in a comma-separated list, except `num_warps`
/// and `num_stages`.
fn assigned_names(tokens: TokenStream, out: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for part in tokens.split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ',')) {
        if let [TokenTree::Ident(name), TokenTree::Punct(eq), ..] = part {
            let n = name.to_string();
            if eq.as_char() == '=' && n != "num_warps" && n != "num_stages" && n != "archs" && n != "maxnreg" {
                out.push(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_meta_names_survive_syntax_errors() {
        let ts: TokenStream = "configs = [config(BM = 64, num_warps = 4), config(BM = 128 BN = 32, num_stages = 2)], key = [n]"
            .parse()
            .expect("tokens");
        assert!(AutotuneAttr::parse(ts.clone(), proc_macro2::Span::call_site().into()).is_err());
        assert_eq!(config_meta_names(&ts), vec!["BM".to_string()]);
        let ts: TokenStream = "configs = [config(num_warps = 4, BN = 1.5), Config(BM = 2)]".parse().expect("tokens");
        assert_eq!(config_meta_names(&ts), vec!["BM".to_string(), "BN".to_string()]);
    }

    #[test]
    fn arguments_given_twice_are_errors() {
        let err = |s: &str| KernelAttr::parse(s.parse().expect("tokens")).expect_err(s).to_string();
        assert_eq!(err("B = [16], B = [32]"), "`B` is given twice: list all its values once, like `B = [a, b]`");
        assert_eq!(err("num_warps = 4, num_warps = 8"), "`num_warps` is given twice: give it once");
        assert_eq!(err("fp_fusion = false, fp_fusion = true"), "`fp_fusion` is given twice: give it once");
        assert_eq!(
            err("fp_fusion = 1"),
            "`fp_fusion` takes `true` or `false`: `#[kernel(fp_fusion = false)]` rounds every product on its own instead of contracting `a * b + c` into one `fma`"
        );
        assert_eq!(KernelAttr::parse("fp_fusion = false".parse().expect("tokens")).expect("valid").fp_fusion, Some(false));
        assert_eq!(err("B = [1 << 4]"), "meta-parameter values are integer literals, not expressions: write the number");
    }
}
