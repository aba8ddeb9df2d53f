//! The declared instances of a kernel: autotune configs × launch-time meta values × function
//! meta values. Every instance that can run is known at compile time.

use crate::attr::{AttrValue, AutotuneAttr, KernelAttr};
use syn::Ident;
use crate::diag::{Diagnostics, Sp, SpanRange};
use crate::ir::{MetaKind, ParamKind};
use crate::signature::Signature;
use std::collections::HashMap;

/// A meta-parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaVal {
    Int(i64),
    Bool(bool),
}

impl std::fmt::Display for MetaVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaVal::Int(v) => write!(f, "{v}"),
            MetaVal::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl MetaVal {
    pub fn as_i64(&self) -> i64 {
        match self {
            MetaVal::Int(v) => *v,
            MetaVal::Bool(b) => *b as i64,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConfigData {
    /// (meta name, value) for the autotuned meta-parameters.
    pub metas: Vec<(String, MetaVal)>,
    pub num_warps: i64,
    pub num_stages: i64,
    /// The device architectures whose builds have this config's entries ([`ARCHS`]); empty:
    /// every one.
    pub archs: Vec<String>,
    /// At most this many registers per thread in its entries (`maxnreg`).
    pub maxnreg: Option<u32>,
}

/// The architectures a config may name in `archs = [...]`: `sm_90a` (the Hopper body, built
/// with `--arch sm_90a`) and `sm_80` (the body every other architecture runs).
pub const ARCHS: [&str; 2] = ["sm_80", "sm_90a"];

pub struct Instances {
    pub configs: Vec<ConfigData>,
    /// Integer/bool meta-parameters passed at launch, with their declared values.
    pub launch_metas: Vec<(String, Vec<MetaVal>)>,
    /// Function meta-parameters with their declared values (`None` = no function).
    pub fn_metas: Vec<(String, Vec<Option<String>>)>,
    pub key: Vec<String>,
    pub autotuned: bool,
}

pub const MAX_INSTANCES: usize = 4096;

/// One compiled instance: a config, a function-meta variant and launch-time meta values.
pub struct InstanceKey {
    pub config: usize,
    pub variant: usize,
    pub launch: Vec<(String, MetaVal)>,
    /// Every integer/bool meta value of the instance.
    pub vals: HashMap<String, i64>,
    /// The stable, readable device entry name.
    pub entry: String,
}

fn val_name(v: &MetaVal) -> String {
    match v {
        MetaVal::Int(i) if *i < 0 => format!("m{}", -i),
        MetaVal::Int(i) => i.to_string(),
        MetaVal::Bool(b) => b.to_string(),
    }
}

impl Instances {
    /// How many instances are declared, counted without enumerating them (a few long value
    /// lists multiply beyond what fits in memory).
    pub fn count(&self) -> u128 {
        let lens = self.launch_metas.iter().map(|(_, v)| v.len()).chain(self.fn_metas.iter().map(|(_, v)| v.len()));
        lens.fold(self.configs.len() as u128, |n, l| n.saturating_mul(l as u128))
    }

    /// Each assignment of the function meta-parameters: one IR variant each.
    pub fn variants(&self) -> Vec<Vec<(String, Option<String>)>> {
        let mut out: Vec<Vec<(String, Option<String>)>> = vec![vec![]];
        for (name, vals) in &self.fn_metas {
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    vals.iter().map(move |v| {
                        let mut p = prefix.clone();
                        p.push((name.clone(), v.clone()));
                        p
                    })
                })
                .collect();
        }
        out
    }

    /// Every instance, config-major, then variant, then launch-time values in declaration order.
    pub fn enumerate(&self, kernel: &str) -> Vec<InstanceKey> {
        let variants = self.variants();
        let mut launch_combos: Vec<Vec<(String, MetaVal)>> = vec![vec![]];
        for (name, vals) in &self.launch_metas {
            launch_combos = launch_combos
                .into_iter()
                .flat_map(|p| {
                    vals.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((name.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        let mut out = Vec::new();
        for (ci, c) in self.configs.iter().enumerate() {
            for (vi, var) in variants.iter().enumerate() {
                for combo in &launch_combos {
                    let mut parts = vec![kernel.to_string()];
                    // Inner parts drop `r#`: `k__r#type_16` is no identifier.
                    for (_, f) in var {
                        parts.push(f.as_deref().unwrap_or("none").trim_start_matches("r#").to_string());
                    }
                    if self.autotuned {
                        parts.push(format!("c{ci}"));
                    }
                    for (n, v) in combo {
                        parts.push(format!("{}_{}", n.trim_start_matches("r#"), val_name(v)));
                    }
                    let vals = c.metas.iter().chain(combo.iter()).map(|(n, v)| (n.clone(), v.as_i64())).collect();
                    out.push(InstanceKey { config: ci, variant: vi, launch: combo.clone(), vals, entry: parts.join("__") });
                }
            }
        }
        out
    }

    /// Every concrete assignment of the integer/bool meta-parameters, with a description.
    pub fn concrete(&self) -> Vec<(HashMap<String, i64>, String)> {
        let mut out = Vec::new();
        for c in &self.configs {
            let mut partial: Vec<Vec<(String, MetaVal)>> = vec![c.metas.clone()];
            for (name, vals) in &self.launch_metas {
                partial = partial
                    .into_iter()
                    .flat_map(|p| {
                        vals.iter().map(move |v| {
                            let mut q = p.clone();
                            q.push((name.clone(), v.clone()));
                            q
                        })
                    })
                    .collect();
            }
            for p in partial {
                let desc = p.iter().map(|(n, v)| format!("{n} = {v}")).collect::<Vec<_>>().join(", ");
                out.push((p.into_iter().map(|(n, v)| (n, v.as_i64())).collect(), desc));
            }
        }
        out
    }
}

fn int_fits(ty: &str, v: i64) -> bool {
    match ty {
        "i32" => i32::try_from(v).is_ok(),
        "u32" => u32::try_from(v).is_ok(),
        "u64" | "usize" => v >= 0,
        _ => true,
    }
}

/// Checks one meta value against the meta-parameter's declared kind.
fn check_meta_value(kind: &MetaKind, name: &str, v: &AttrValue, helpers: &[String], diag: &mut Diagnostics) -> bool {
    match (kind, v) {
        (MetaKind::Int(ty), AttrValue::Int(x, s)) => {
            if !int_fits(ty, *x) {
                diag.error(*s, format!("value {x} does not fit meta-parameter `{name}: {ty}`"));
                return false;
            }
            true
        }
        (MetaKind::Bool, AttrValue::Bool(..)) => true,
        (MetaKind::Func { optional }, AttrValue::Func(f, s)) => match f {
            None if !optional => {
                diag.error(*s, format!("`{name}` is `Func`, not `Option<Func>`: `None` is not a value of it"));
                false
            }
            None => true,
            Some(id) if helpers.iter().any(|h| id == h) => true,
            Some(id) => {
                let known = if helpers.is_empty() { "none: define helpers with #[helper] inside a #[kernel_module]".to_string() } else { helpers.join(", ") };
                diag.error(id.sp(), format!("`{id}` is not a helper function of this kernel module (helpers: {known})"));
                false
            }
        },
        (k, v) => {
            let want = match k {
                MetaKind::Int(t) => format!("an integer ({t})"),
                MetaKind::Bool => "`true` or `false`".to_string(),
                MetaKind::Func { optional: true } => "`None` or `Some(helper)`".to_string(),
                MetaKind::Func { optional: false } => "a helper function name".to_string(),
            };
            diag.error(v.span(), format!("meta-parameter `{name}` takes {want}"));
            false
        }
    }
}

fn to_meta_val(v: &AttrValue) -> MetaVal {
    match v {
        AttrValue::Int(x, _) => MetaVal::Int(*x),
        AttrValue::Bool(b, _) => MetaVal::Bool(*b),
        AttrValue::Func(..) => MetaVal::Int(0),
    }
}

/// Rule: `num_warps` is a power of two from 1 to 32.
fn check_num_warps(num_warps: i64, span: Sp, diag: &mut Diagnostics) {
    if !(1..=32).contains(&num_warps) || (num_warps & (num_warps - 1)) != 0 {
        diag.error(span, format!("num_warps must be a power of two from 1 to 32, got {num_warps}"));
    }
}

/// Rule: a config's `archs` name known device architectures ([`ARCHS`]), each once. Naming
/// all of them is the same as naming none.
fn config_archs(names: &[Ident], diag: &mut Diagnostics) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in names {
        let n = id.to_string();
        if !ARCHS.contains(&n.as_str()) {
            diag.error(id.sp(), format!("unknown device architecture `{n}`: a config's `archs` may name {} (every other architecture runs the sm_80 body)", ARCHS.join(" and ")));
        } else if out.contains(&n) {
            diag.error(id.sp(), format!("`{n}` is named twice in `archs`"));
        } else {
            out.push(n);
        }
    }
    if out.len() == ARCHS.len() {
        out.clear();
    }
    out
}

/// Rule: `maxnreg` is 16 to 255 registers per thread (the hardware's limit is 255).
fn check_maxnreg(m: Option<(i64, Sp)>, diag: &mut Diagnostics) -> Option<u32> {
    let (n, span) = m?;
    if !(16..=255).contains(&n) {
        diag.error(span, format!("maxnreg must be from 16 to 255 registers per thread, got {n}"));
        return None;
    }
    Some(n as u32)
}

/// Rule: `num_stages` is 1 to 8.
fn check_num_stages(num_stages: i64, span: Sp, diag: &mut Diagnostics) {
    if !(1..=8).contains(&num_stages) {
        diag.error(span, format!("num_stages must be from 1 to 8, got {num_stages}"));
    }
}

/// The part of a device entry name a meta value gives (`B_64`: `64`; `ACT = None`: `none`).
fn entry_part(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(x, _) => val_name(&MetaVal::Int(*x)),
        AttrValue::Bool(b, _) => b.to_string(),
        AttrValue::Func(f, _) => f.as_ref().map_or("none".to_string(), |f| f.to_string().trim_start_matches("r#").to_string()),
    }
}

fn shown(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(x, _) => x.to_string(),
        AttrValue::Bool(b, _) => b.to_string(),
        AttrValue::Func(f, _) => f.as_ref().map_or("None".to_string(), |f| f.to_string()),
    }
}

/// Rule: the declared values of a meta-parameter are distinct: each value is a device entry
/// named after it, so a repeated value (or two that give the same name) would define one
/// entry twice. Returns the values without the repeats.
fn distinct_values<'v>(name: &str, vals: &'v [AttrValue], diag: &mut Diagnostics) -> Vec<&'v AttrValue> {
    let mut kept: Vec<&AttrValue> = Vec::new();
    for v in vals {
        match kept.iter().find(|k| entry_part(k) == entry_part(v)) {
            Some(k) if shown(k) == shown(v) => {
                diag.error(v.span(), format!("`{name} = {}` is listed twice: remove the repeat", shown(v)))
            }
            Some(k) => diag.error(
                v.span(),
                format!("`{name} = {}` gives the same device entry name as `{name} = {}`: rename the helper", shown(v), shown(k)),
            ),
            None => kept.push(v),
        }
    }
    kept
}

/// Rule: autotune configs are distinct (a repeated config would be compiled and timed twice).
/// Configs with an error in a meta value are not compared.
fn check_distinct_configs(at: &AutotuneAttr, configs: &[ConfigData], diag: &mut Diagnostics) {
    let sorted = |c: &ConfigData| {
        let mut m = c.metas.clone();
        m.sort_by(|a, b| a.0.cmp(&b.0));
        // Configs that differ only in their architectures would have the same code.
        ConfigData { metas: m, archs: vec![], ..c.clone() }
    };
    let mut seen: Vec<(usize, ConfigData)> = Vec::new();
    for (i, (c, attr)) in configs.iter().zip(&at.configs).enumerate() {
        if c.metas.len() != attr.metas.len() {
            continue;
        }
        let key = sorted(c);
        match seen.iter().find(|(_, k)| *k == key) {
            Some((j, _)) => diag.error(attr.span, format!("this config is the same as config {j}: remove it")),
            None => seen.push((i, key)),
        }
    }
}

pub fn collect_instances(
    sig: &Signature,
    kattr: &KernelAttr,
    autotune: Option<&AutotuneAttr>,
    helpers: &[String],
    fn_span: Sp,
    attrs_failed: bool,
    diag: &mut Diagnostics,
) -> Instances {
    let meta_kind = |n: &str| sig.metas.iter().find(|m| m.name == n).map(|m| m.kind.clone());
    let warps_list: Vec<i64> = kattr.num_warps.as_ref().map_or(vec![4], |l| l.iter().map(|w| w.0).collect());
    let stages_list: Vec<i64> = kattr.num_stages.as_ref().map_or(vec![3], |l| l.iter().map(|w| w.0).collect());
    for &(w, s) in kattr.num_warps.iter().flatten() {
        check_num_warps(w, s, diag);
    }
    for &(st, s) in kattr.num_stages.iter().flatten() {
        check_num_stages(st, s, diag);
    }
    let listed = warps_list.len() * stages_list.len() > 1;
    if let (true, Some(_)) = (listed, autotune) {
        let sp = kattr.num_warps.iter().chain(kattr.num_stages.iter()).flatten().next().map(|x| x.1).unwrap_or(fn_span);
        diag.error(sp, "with #[autotune], give num_warps and num_stages in each config(...), not as lists in #[kernel]");
    }
    if let (Some((_, sp)), Some(_)) = (kattr.maxnreg, autotune) {
        diag.error(sp, "with #[autotune], give maxnreg in each config(...) that wants it, not in #[kernel]");
    }

    // Autotuned meta-parameters.
    let mut configs = Vec::new();
    let mut tuned: Vec<String> = Vec::new();
    if let Some(at) = autotune {
        for (i, c) in at.configs.iter().enumerate() {
            check_num_warps(c.num_warps.0, c.num_warps.1, diag);
            check_num_stages(c.num_stages.0, c.num_stages.1, diag);
            let mut metas = Vec::new();
            for (name, v) in &c.metas {
                let n = name.to_string();
                match meta_kind(&n) {
                    None if sig.all_const_generics.contains(&n) => {}
                    None => diag.error(name.sp(), format!("`{n}` is not a meta-parameter of this kernel")),
                    Some(MetaKind::Func { .. }) => diag.error(
                        name.sp(),
                        format!("function meta-parameter `{n}` is chosen at launch: declare its values in #[kernel({n} = [...])]"),
                    ),
                    Some(k) => {
                        if check_meta_value(&k, &n, v, helpers, diag) {
                            metas.push((n, to_meta_val(v)));
                        }
                    }
                }
            }
            let names: Vec<String> = metas.iter().map(|(n, _)| n.clone()).collect();
            if i == 0 {
                tuned = names;
            } else {
                let mut a = tuned.clone();
                let mut b = names.clone();
                a.sort();
                b.sort();
                if a != b {
                    diag.error(c.span, "every autotune config must set the same meta-parameters as the first one");
                }
            }
            let archs = config_archs(&c.archs, diag);
            let maxnreg = check_maxnreg(c.maxnreg, diag);
            configs.push(ConfigData { metas, num_warps: c.num_warps.0, num_stages: c.num_stages.0, archs, maxnreg });
        }
        check_distinct_configs(at, &configs, diag);
    } else {
        // `num_warps = [4, 8]`, `num_stages = [2, 3]`: one config per combination, tuned at launch.
        let maxnreg = check_maxnreg(kattr.maxnreg, diag);
        for &w in &warps_list {
            for &st in &stages_list {
                configs.push(ConfigData { metas: vec![], num_warps: w, num_stages: st, archs: vec![], maxnreg });
            }
        }
    }

    // Launch-time and function meta-parameters.
    let mut launch_metas = Vec::new();
    let mut fn_metas = Vec::new();
    for (name, vals) in &kattr.values {
        let n = name.to_string();
        let Some(kind) = meta_kind(&n) else {
            if !sig.all_const_generics.contains(&n) {
                diag.error(name.sp(), format!("`{n}` is not a meta-parameter of this kernel"));
            }
            continue;
        };
        if tuned.contains(&n) {
            diag.error(name.sp(), format!("`{n}` is already chosen by the autotune configs"));
            continue;
        }
        if vals.is_empty() {
            diag.error(name.sp(), format!("declare at least one value for `{n}`"));
            continue;
        }
        let ok = vals.iter().all(|v| check_meta_value(&kind, &n, v, helpers, diag));
        if !ok {
            continue;
        }
        let vals = distinct_values(&n, vals, diag);
        if let MetaKind::Func { .. } = kind {
            let fs = vals
                .iter()
                .map(|v| match v {
                    AttrValue::Func(f, _) => f.as_ref().map(|i| i.to_string()),
                    _ => None,
                })
                .collect();
            fn_metas.push((n, fs));
        } else {
            launch_metas.push((n, vals.iter().map(|v| to_meta_val(v)).collect()));
        }
    }
    // Rule: every meta-parameter has declared values (unless an attribute already failed).
    let mentioned_in_configs = |n: &str| autotune.is_some_and(|at| at.configs.iter().any(|c| c.metas.iter().any(|(m, _)| m == n)));
    for m in sig.metas.iter().filter(|_| !attrs_failed) {
        let declared = tuned.contains(&m.name) || kattr.values.iter().any(|(n, _)| *n == m.name) || mentioned_in_configs(&m.name);
        if !declared {
            let hint = match m.kind {
                MetaKind::Func { .. } => format!("#[kernel({} = [None, Some(helper)])]", m.name),
                _ => format!("#[kernel({} = [value, ...])] or an #[autotune] config", m.name),
            };
            diag.error(m.span, format!("meta-parameter `{}` has no declared values: add {hint}", m.name));
        }
    }
    // Rule: autotune keys are scalar parameters.
    let mut key = Vec::new();
    if let Some(at) = autotune {
        for k in &at.key {
            let ks = k.to_string();
            if key.contains(&ks) {
                diag.error(k.sp(), format!("autotune key `{ks}` is listed twice: list it once"));
                continue;
            }
            match sig.params.iter().find(|p| p.name == ks) {
                Some(p) if matches!(p.kind, ParamKind::Scalar(_)) => key.push(ks),
                Some(_) => diag.error(k.sp(), format!("autotune key `{ks}` must be a scalar parameter, not a pointer")),
                // A parameter of an unsupported type: reported already.
                None if sig.api_params.iter().any(|p| p.name == ks) => {}
                None => diag.error(k.sp(), format!("autotune key `{ks}` is not a parameter of this kernel")),
            }
        }
    }
    let inst = Instances { configs, launch_metas, fn_metas, key, autotuned: autotune.is_some() || listed };
    let count = inst.count();
    if count > MAX_INSTANCES as u128 {
        diag.error(fn_span, format!("this kernel declares {count} instances; the limit is {MAX_INSTANCES}"));
    }
    inst
}
