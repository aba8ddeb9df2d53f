//! Whole kernels and expressions generated from a small grammar of the block language.

use super::vocab::*;
use crate::kernel;
use quote::quote;
use std::fmt::Write as _;
use syn::visit_mut::VisitMut;

/// Names a generator can use, by kind.
#[derive(Default, Clone)]
pub(super) struct Scope {
    ptrs: Vec<(String, String)>,
    ints: Vec<String>,
    floats: Vec<String>,
    bools: Vec<String>,
    metas: Vec<String>,
    fn_metas: Vec<String>,
    helpers: Vec<String>,
    locals: Vec<String>,
}

impl Scope {
    /// Guesses kinds from the names seen in an input (for token-level insertion).
    pub(super) fn from_names(names: &[String]) -> Scope {
        let mut s = Scope::default();
        for n in names {
            if BUILTINS.contains(&n.as_str()) || DTYPES.contains(&n.as_str()) || KEYWORDS.contains(&n.as_str()) {
                continue;
            }
            if n.ends_with("ptr") || n.ends_with("_ptrs") {
                s.ptrs.push((n.clone(), "f32".into()));
            } else if n.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()) {
                s.metas.push(n.clone());
            } else {
                s.locals.push(n.clone());
            }
        }
        s
    }

    /// Reads the kernels and helpers of a parsed input.
    pub(super) fn from_file(file: &mut syn::File) -> Scope {
        struct V<'s>(&'s mut Scope);
        impl VisitMut for V<'_> {
            fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
                if f.attrs.iter().any(|a| kernel::is_attr(a, "helper")) {
                    self.0.helpers.push(f.sig.ident.to_string());
                }
                for g in &f.sig.generics.params {
                    if let syn::GenericParam::Const(c) = g {
                        let name = c.ident.to_string();
                        let ty = &c.ty;
                        let t = quote!(#ty).to_string();
                        if t.contains("Func") {
                            self.0.fn_metas.push(name);
                        } else if t == "bool" {
                            self.0.bools.push(name);
                        } else {
                            self.0.metas.push(name);
                        }
                    }
                }
                for input in &f.sig.inputs {
                    if let syn::FnArg::Typed(pt) = input {
                        let name = match &*pt.pat {
                            syn::Pat::Ident(pi) => pi.ident.to_string(),
                            _ => continue,
                        };
                        let ty = &pt.ty;
                        let t = quote!(#ty).to_string().replace(' ', "");
                        if let Some(d) = t.strip_prefix("Ptr<").and_then(|r| r.strip_suffix('>')) {
                            self.0.ptrs.push((name, d.to_string()));
                        } else if t.contains("f32") || t.contains("f16") {
                            self.0.floats.push(name);
                        } else if t == "bool" {
                            self.0.bools.push(name);
                        } else {
                            self.0.ints.push(name);
                        }
                    }
                }
                syn::visit_mut::visit_item_fn_mut(self, f);
            }
            fn visit_local_mut(&mut self, l: &mut syn::Local) {
                if let syn::Pat::Ident(pi) = &l.pat {
                    self.0.locals.push(pi.ident.to_string());
                }
                syn::visit_mut::visit_local_mut(self, l);
            }
        }
        let mut s = Scope::default();
        V(&mut s).visit_file_mut(file);
        s
    }
}

/// Generates kernel source text from a small grammar. Each production mostly yields the kind
/// asked for (index blocks, pointer blocks, masks, values, scalars), sometimes another kind,
/// so both valid kernels and type errors come out.
pub(super) struct Gen<'r> {
    pub(super) rng: &'r mut Rng,
    pub(super) s: Scope,
    /// The dimension of the 1-D blocks this kernel builds.
    pub(super) dim: String,
    pub(super) fresh: usize,
}

impl<'r> Gen<'r> {
    pub(super) fn new(rng: &'r mut Rng, s: Scope) -> Gen<'r> {
        let dim = if !s.metas.is_empty() && rng.chance(80) { rng.pick(&s.metas).clone() } else { "16".to_string() };
        Gen { rng, s, dim, fresh: 0 }
    }

    pub(super) fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    pub(super) fn confuse(&mut self, d: usize) -> Option<String> {
        // Sometimes another kind than the one asked for.
        if d > 0 && self.rng.chance(4) {
            Some(self.any(d - 1))
        } else {
            None
        }
    }

    pub(super) fn lit_int(&mut self) -> String {
        if self.rng.chance(12) {
            self.rng.pick(EXTREME_INTS).to_string()
        } else {
            self.rng.pick(&["0", "1", "2", "3", "4", "8", "16", "32"]).to_string()
        }
    }

    pub(super) fn lit_float(&mut self) -> String {
        if self.rng.chance(15) {
            self.rng.pick(EXTREME_FLOATS).to_string()
        } else {
            self.rng.pick(&["0.0", "1.0", "0.5", "2.0", "-1.0", "0.01"]).to_string()
        }
    }

    pub(super) fn dim(&mut self) -> String {
        match self.rng.below(20) {
            0 => self.rng.pick(&["0", "3", "48", "1099511627776", "2 * 1099511627776", "-16", "1048576"]).to_string(),
            3 => self.rng.pick(&["1099511627776", "1073741824", "4294967296"]).to_string(),
            1 if !self.s.metas.is_empty() => format!("2 * {}", self.rng.pick(&self.s.metas)),
            2 if !self.s.metas.is_empty() => format!("{} * {}", self.rng.pick(&self.s.metas), self.rng.pick(&self.s.metas)),
            _ => self.dim.clone(),
        }
    }

    pub(super) fn dtype(&mut self) -> String {
        if self.rng.chance(8) {
            self.rng.pick(DTYPES).to_string()
        } else {
            self.rng.pick(&["f32", "f16", "bf16", "i32", "i64", "u32", "f64"]).to_string()
        }
    }

    pub(super) fn scalar_int(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 4 } else { 11 };
        match self.rng.below(top) {
            0 => self.lit_int(),
            1 if !self.s.ints.is_empty() => self.rng.pick(&self.s.ints).clone(),
            2 if !self.s.metas.is_empty() => self.rng.pick(&self.s.metas).clone(),
            0..=3 => format!("program_id({})", self.rng.pick(&["0", "1", "2", "3", "0"])),
            4 => format!("num_programs({})", self.rng.below(3)),
            5 => format!("cdiv({}, {})", self.scalar_int(d - 1), self.scalar_int(d - 1)),
            6 => format!("min({}, {})", self.scalar_int(d - 1), self.scalar_int(d - 1)),
            7 => format!("({}).sum(0)", self.idx(d - 1)),
            8 => format!("({}) as i64", self.scalar_int(d - 1)),
            _ => {
                let op = *self.rng.pick(&["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]);
                format!("({} {op} {})", self.scalar_int(d - 1), self.scalar_int(d - 1))
            }
        }
    }

    pub(super) fn scalar_float(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 2 } else { 7 };
        match self.rng.below(top) {
            0 if !self.s.floats.is_empty() => self.rng.pick(&self.s.floats).clone(),
            0 | 1 => self.lit_float(),
            2 => format!("exp({})", self.scalar_float(d - 1)),
            3 => format!("({}).sum(0)", self.val(d - 1)),
            4 => format!("({}).max(0)", self.val(d - 1)),
            5 => format!("({}).to::<f32>()", self.scalar_int(d - 1)),
            _ => {
                let op = *self.rng.pick(&["+", "-", "*", "/"]);
                format!("({} {op} {})", self.scalar_float(d - 1), self.scalar_float(d - 1))
            }
        }
    }

    pub(super) fn cond(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        match self.rng.below(4) {
            0 if !self.s.bools.is_empty() => self.rng.pick(&self.s.bools).clone(),
            1 => format!("{} < {}", self.scalar_int(d.saturating_sub(1)), self.scalar_int(d.saturating_sub(1))),
            2 => format!("{} > {}", self.scalar_float(d.saturating_sub(1)), self.lit_float()),
            _ => format!("{} == {}", self.scalar_int(d.saturating_sub(1)), self.lit_int()),
        }
    }

    pub(super) fn idx(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 2 } else { 8 };
        match self.rng.below(top) {
            0 => format!("arange(0, {})", self.dim()),
            1 if !self.s.locals.is_empty() && self.rng.chance(50) => self.rng.pick(&self.s.locals).clone(),
            1 => format!("program_id(0) * {} + arange(0, {})", self.dim, self.dim),
            2 => format!("({} + {})", self.scalar_int(d - 1), self.idx(d - 1)),
            3 => format!("({} * {})", self.idx(d - 1), self.scalar_int(d - 1)),
            4 => format!("({} % {})", self.idx(d - 1), self.scalar_int(d - 1)),
            5 => format!("({}).to::<i64>()", self.idx(d - 1)),
            6 => format!("arange({}, {} + {})", self.lit_int(), self.lit_int(), self.dim()),
            _ => format!("where_({}, {}, {})", self.mask(d - 1), self.idx(d - 1), self.lit_int()),
        }
    }

    pub(super) fn ptr(&mut self) -> (String, String) {
        if self.s.ptrs.is_empty() {
            return ("x".to_string(), "f32".to_string());
        }
        self.rng.pick(&self.s.ptrs).clone()
    }

    pub(super) fn ptrs(&mut self, d: usize) -> (String, String) {
        let (p, t) = self.ptr();
        let e = match self.rng.below(6) {
            0 => p.clone(),
            1 => format!("{p} + {}", self.scalar_int(d.saturating_sub(1))),
            2 => format!("{p} - {}", self.idx(d.saturating_sub(1))),
            3 => {
                let (a, b) = (self.idx(d.saturating_sub(1)), self.idx(d.saturating_sub(1)));
                format!("{p} + ({a}).as_col() * {} + ({b}).as_row()", self.dim)
            }
            _ => format!("{p} + {}", self.idx(d.saturating_sub(1))),
        };
        (e, t)
    }

    pub(super) fn mask(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        let top = if d == 0 { 1 } else { 5 };
        match self.rng.below(top) {
            0 => {
                let n = self.scalar_int(d.saturating_sub(1));
                format!("arange(0, {}) < {n}", self.dim)
            }
            1 => format!("({} < {})", self.idx(d - 1), self.scalar_int(d - 1)),
            2 => format!("({}) & ({})", self.mask(d - 1), self.mask(d - 1)),
            3 => format!("!({})", self.mask(d - 1)),
            _ => format!("({} >= {})", self.val(d - 1), self.lit_float()),
        }
    }

    pub(super) fn load(&mut self, d: usize) -> String {
        let (p, t) = self.ptrs(d);
        let is_float = t.starts_with('f') || t.starts_with("bf");
        let v = match self.rng.below(3) {
            0 => format!("load({p})"),
            1 => format!("load({p}, {})", self.mask(d.saturating_sub(1))),
            _ => {
                let o = if is_float { self.lit_float() } else { self.lit_int() };
                format!("load({p}, {}, {o})", self.mask(d.saturating_sub(1)))
            }
        };
        if self.rng.chance(60) {
            format!("{v}.to::<f32>()")
        } else {
            v
        }
    }

    pub(super) fn val(&mut self, d: usize) -> String {
        if let Some(x) = self.confuse(d) {
            return x;
        }
        if d == 0 {
            return match self.rng.below(3) {
                0 => format!("zeros::<f32>([{}])", self.dim),
                1 if !self.s.locals.is_empty() => self.rng.pick(&self.s.locals).clone(),
                _ => format!("arange(0, {}).to::<f32>()", self.dim),
            };
        }
        match self.rng.below(16) {
            0 | 1 => self.load(d - 1),
            2 => {
                let op = *self.rng.pick(&["+", "-", "*", "/", "%"]);
                format!("({} {op} {})", self.val(d - 1), self.val(d - 1))
            }
            3 => format!("({} * {})", self.val(d - 1), self.lit_float()),
            4 => format!("{}({})", self.rng.pick(&["exp", "log", "sqrt", "abs", "sin", "cos", "exp2", "rsqrt", "floor"]), self.val(d - 1)),
            5 => format!("({}).to::<{}>().to::<f32>()", self.val(d - 1), self.dtype()),
            6 => format!("where_({}, {}, {})", self.mask(d - 1), self.val(d - 1), self.val(d - 1)),
            7 => format!("full::<{}>([{}], {})", self.dtype(), self.dim(), self.scalar_float(d - 1)),
            8 => format!("{}({}, {})", self.rng.pick(&["maximum", "minimum", "max", "min"]), self.val(d - 1), self.lit_float()),
            9 => format!("-{}", self.val(d - 1)),
            10 => format!("({}).sum(1)", self.val2(d - 1)),
            11 => format!("({}).max(0)", self.val2(d - 1)),
            12 => format!("({}).reshape([{}])", self.val(d - 1), self.dim),
            13 if !self.s.helpers.is_empty() => {
                let h = self.rng.pick(&self.s.helpers).clone();
                format!("{h}({})", self.val(d - 1))
            }
            13 => format!("({}).expand_dims(0).sum(0)", self.val(d - 1)),
            14 => format!("({} + {})", self.val(d - 1), self.scalar_float(d - 1)),
            _ => format!("({}).broadcast_to([{}])", self.scalar_float(d - 1), self.dim),
        }
    }

    pub(super) fn val2(&mut self, d: usize) -> String {
        if d == 0 {
            return format!("zeros::<f32>([{}, {}])", self.dim, self.dim);
        }
        match self.rng.below(7) {
            0 => format!("({}).as_col() * ({}).as_row()", self.val(d - 1), self.val(d - 1)),
            1 => format!("dot({}, {})", self.val2(d - 1), self.val2(d - 1)),
            2 => format!("dot({}, {}, {})", self.val2(d - 1), self.val2(d - 1), self.val2(d - 1)),
            3 => format!("({}).trans()", self.val2(d - 1)),
            4 => {
                let (p, _) = self.ptr();
                let i = format!("arange(0, {})", self.dim);
                format!("load({p} + ({i}).as_col() * {} + ({i}).as_row()).to::<f32>()", self.dim)
            }
            5 => {
                let (a, b) = (self.dim(), self.dim());
                format!("zeros::<f32>([{a}, {b}])")
            }
            _ => {
                let v = self.lit_float();
                format!("full::<f32>([{}, {}], {v})", self.dim, self.dim)
            }
        }
    }

    pub(super) fn any(&mut self, d: usize) -> String {
        match self.rng.below(8) {
            0 => self.scalar_int(d),
            1 => self.scalar_float(d),
            2 => self.idx(d),
            3 => self.ptrs(d).0,
            4 => self.mask(d),
            5 => self.val2(d),
            6 => self.load(d),
            _ => self.val(d),
        }
    }

    pub(super) fn stmt(&mut self, d: usize) -> String {
        let top = if d == 0 { 5 } else { 12 };
        match self.rng.below(top) {
            0 => {
                let n = self.name("v");
                let e = self.val(2);
                self.s.locals.push(n.clone());
                format!("let {n} = {e};")
            }
            1 => {
                let n = self.name("i");
                let e = self.idx(2);
                format!("let {n} = {e};")
            }
            2 => {
                let n = self.name("acc");
                let init = self.val(1);
                let upd = self.val(2);
                let op = *self.rng.pick(&["=", "+=", "*=", "-="]);
                let upd = if op == "=" { format!("{n} + {upd}") } else { upd };
                format!("let mut {n} = {init}; {n} {op} {upd};")
            }
            3 | 4 => {
                let (p, t) = self.ptrs(1);
                let v = self.val(2);
                match self.rng.below(3) {
                    0 => format!("store({p}, ({v}).to::<{t}>());"),
                    1 => format!("store({p}, ({v}).to::<{t}>(), {});", self.mask(1)),
                    _ => format!("store({p}, {v}, {});", self.mask(1)),
                }
            }
            5 => {
                let var = self.name("k");
                let range = match self.rng.below(4) {
                    0 => format!("0..{}", self.scalar_int(1)),
                    1 => format!("({}..{}).step_by({})", self.scalar_int(1), self.scalar_int(1), self.scalar_int(0)),
                    2 => format!("range({}, {}, {})", self.scalar_int(1), self.lit_int(), self.rng.pick(&["-1", "1", "0", "-3", "2"])),
                    _ => format!("range(0, {})", self.scalar_int(1)),
                };
                let n = 1 + self.rng.below(3);
                format!("for {var} in {range} {{ {} }}", self.stmts(n, d - 1))
            }
            6 => {
                let n = 1 + self.rng.below(3);
                let m = self.rng.below(3);
                let c = self.cond(2);
                let then = self.stmts(n, d - 1);
                if m == 0 {
                    format!("if {c} {{ {then} }}")
                } else {
                    format!("if {c} {{ {then} }} else {{ {} }}", self.stmts(m, d - 1))
                }
            }
            7 if !self.s.fn_metas.is_empty() => {
                let meta = self.rng.pick(&self.s.fn_metas).clone();
                let v = self.name("t");
                let init = self.val(1);
                format!("let mut {v} = {init}; if let Some(f) = {meta} {{ {v} = f({v}); }} else {{ {v} = -{v}; }}")
            }
            8 => format!("if {} {{ return; }}", self.cond(1)),
            9 => {
                let n = self.name("s");
                let e = self.scalar_int(2);
                format!("let mut {n} = {e}; {n} += {};", self.scalar_int(1))
            }
            10 => format!("let {} = {};", self.name("w"), self.val2(2)),
            _ => {
                let n = 1 + self.rng.below(2);
                format!("{{ {} }}", self.stmts(n, d - 1))
            }
        }
    }

    pub(super) fn stmts(&mut self, n: usize, d: usize) -> String {
        (0..n).map(|_| self.stmt(d)).collect::<Vec<_>>().join(" ")
    }
}

/// A whole random kernel: signature, attributes, optional autotune and helpers, body.
pub(super) fn gen_kernel(rng: &mut Rng) -> String {
    let mut s = Scope::default();
    let mut generics = Vec::new();
    let mut kattr = Vec::new();
    let mut tuned = Vec::new();
    let int_vals = |rng: &mut Rng| -> String {
        let n = 1 + rng.below(3);
        let vals: Vec<String> = (0..n)
            .map(|_| {
                if rng.chance(15) {
                    rng.pick(EXTREME_INTS).to_string()
                } else {
                    rng.pick(&["1", "2", "4", "8", "16", "32", "64", "128", "256"]).to_string()
                }
            })
            .collect();
        vals.join(", ")
    };
    let autotune = rng.chance(25);
    for name in ["BLOCK", "BN", "r#type", "K_TILE"].iter().take(rng.below(4)) {
        let ty = if rng.chance(75) { "i32" } else { *rng.pick(&["i64", "i64", "i64", "u32", "usize", "u64", "isize", "f32", "bool", "Func"]) };
        generics.push(format!("const {name}: {ty}"));
        s.metas.push(name.to_string());
        if autotune && rng.chance(70) {
            tuned.push(name.to_string());
        } else if rng.chance(95) {
            kattr.push(format!("{name} = [{}]", int_vals(rng)));
        }
    }
    if rng.chance(30) {
        generics.push("const FLAG: bool".to_string());
        s.bools.push("FLAG".to_string());
        kattr.push(rng.pick(&["FLAG = [true, false]", "FLAG = [false]", "FLAG = [1]"]).to_string());
    }
    let helpers = rng.chance(30);
    if helpers {
        s.helpers = vec!["h0".to_string(), "h1".to_string()];
        if rng.chance(60) {
            generics.push(format!("const ACT: {}", rng.pick(&["Option<Func>", "Option<Func>", "Func"])));
            s.fn_metas.push("ACT".to_string());
            kattr.push(rng.pick(&["ACT = [None, Some(h0)]", "ACT = [Some(h1), Some(h0)]", "ACT = [h0]", "ACT = [None]"]).to_string());
        }
    }
    if rng.chance(25) {
        kattr.push(format!("num_warps = {}", rng.pick(&["1", "2", "4", "8", "32", "0", "3", "64"])));
    }
    let mut params = Vec::new();
    for i in 0..1 + rng.below(3) {
        let t = if rng.chance(90) { *rng.pick(&["f32", "f32", "f16", "bf16", "i32", "i64", "u32", "f64"]) } else { *rng.pick(&["bool", "u8", "usize"]) };
        let n = if rng.chance(4) { format!("r#type{}", "_".repeat(i)) } else { format!("p{i}") };
        params.push(format!("{n}: Ptr<{t}>"));
        s.ptrs.push((n, t.to_string()));
    }
    for i in 0..rng.below(3) {
        let t = *rng.pick(&["i32", "i32", "i64", "u32", "f32", "bool", "f16"]);
        let n = format!("n{i}");
        params.push(format!("{n}: {t}"));
        match t {
            "f32" | "f16" => s.floats.push(n),
            "bool" => s.bools.push(n),
            _ => s.ints.push(n),
        }
    }
    let mut attrs = String::new();
    let _ = write!(attrs, "#[kernel({})]", kattr.join(", "));
    if autotune {
        let nconf = 1 + rng.below(3);
        let confs: Vec<String> = (0..nconf)
            .map(|_| {
                let mut parts: Vec<String> = tuned
                    .iter()
                    .map(|t| format!("{t} = {}", if rng.chance(10) { rng.pick(EXTREME_INTS) } else { rng.pick(&["16", "32", "64"]) }))
                    .collect();
                if rng.chance(50) {
                    parts.push(format!("num_warps = {}", rng.pick(&["1", "2", "4", "8", "5"])));
                }
                if rng.chance(30) {
                    parts.push(format!("num_stages = {}", rng.pick(&["1", "3", "8", "0"])));
                }
                format!("config({})", parts.join(", "))
            })
            .collect();
        let key = if s.ints.is_empty() || rng.chance(20) { String::new() } else { format!(", key = [{}]", s.ints.join(", ")) };
        let _ = write!(attrs, "#[autotune(configs = [{}]{key})]", confs.join(", "));
    }
    let mut g = Gen::new(rng, s);
    let n = 2 + g.rng.below(5);
    let body = g.stmts(n, 2);
    let gens = if generics.is_empty() { String::new() } else { format!("<{}>", generics.join(", ")) };
    let kname = if g.rng.chance(5) { "r#loop" } else { "k" };
    let kernel = format!("{attrs} fn {kname}{gens}({}) {{ {body} }}", params.join(", "));
    if !helpers {
        return kernel;
    }
    let h0 = match g.rng.below(4) {
        0 => "where_(x >= 0.0, x, 0.01 * x)",
        1 => "let y = x * 2.0; y + 1.0",
        2 => "h1(x) * 0.5",
        _ => "exp(x)",
    };
    let h1 = match g.rng.below(4) {
        0 => "x - 1.0",
        1 => "h0(x)",
        2 => "return x * 3.0;",
        _ => "sqrt(abs(x))",
    };
    let h1_sig = if g.rng.chance(20) { "x: Block<f16>" } else { "x: Block" };
    format!(
        "#[kernel_module] mod m {{ #[helper] fn h0(x: Block) -> Block {{ {h0} }} #[helper] fn h1({h1_sig}) -> Block {{ {h1} }} {kernel} }}"
    )
}
