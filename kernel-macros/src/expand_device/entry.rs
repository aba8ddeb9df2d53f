//! Entries: the `extern "ptx-kernel"` functions of an instance (plain and split), one body per
//! target, each planned then emitted, with the signature from the hidden-parameter list and the
//! instance's manifest record.

use super::*;


/// Generates the `extern "ptx-kernel"` entry of one instance.
/// The instance's description for the PTX manifest, as JSON: `cargo xtask build-ptx` reads it
/// back from the exported global `__KERNEL_META_<entry>` and merges it into the manifest.
pub(super) fn entry_metadata(k: &Kernel, entry_name: &str, vals: &HashMap<String, i64>, (num_warps, num_stages, maxnreg): (usize, usize, Option<u32>), shared: usize) -> String {
    let mut metas: Vec<(&String, &i64)> = vals.iter().collect();
    metas.sort();
    let metas = metas.iter().map(|(n, v)| format!("\"{n}\": {v}")).collect::<Vec<_>>().join(", ");
    let fns = k
        .fn_values
        .iter()
        .map(|(n, v)| format!("\"{n}\": {}", v.as_ref().map(|h| format!("\"{h}\"")).unwrap_or_else(|| "null".into())))
        .collect::<Vec<_>>()
        .join(", ");
    let maxnreg = maxnreg.map_or_else(|| "null".to_string(), |n| n.to_string());
    format!(
        "{{\"entry\": \"{entry_name}\", \"kernel\": \"{}\", \"meta\": {{{metas}}}, \"functions\": {{{fns}}}, \"num_warps\": {num_warps}, \"num_stages\": {num_stages}, \"threads_per_block\": {}, \"dynamic_shared_bytes\": {shared}, \"maxnreg\": {maxnreg}}}",
        k.name,
        32 * num_warps
    )
}

/// The name of the `--cfg` with which a device build keeps only the entries of the kernels it
/// names (`kernel_formats::ONLY_CFG`, which kernel-build passes).
pub(crate) const ONLY_CFG: &str = "kernel_only";

/// `#[cfg(..)]` on each device item of kernel `name`: kept unless the build names other kernels
/// only ([`ONLY_CFG`]). Device items sit in a module for `nvptx64` only, so host builds never
/// see the unexpected cfg; device builds declare it (`--check-cfg`).
fn only_cfg(name: &str) -> TokenStream {
    let (cfg, name) = (format_ident!("{}", ONLY_CFG), name.trim_start_matches("r#"));
    quote!(#[cfg(any(not(#cfg), #cfg = #name))])
}

/// The `extern "ptx-kernel"` entries of one instance: `entry_name`, and, when its K loop can be
/// split over blocks (`split.rs`), `<entry_name>__split`, which split launches run instead. The
/// plain entry has no trace of splitting (split code in its K loop and prologue would slow the
/// launches that split nothing). When a tensor-core `dot` can use Hopper's
/// `wgmma`, each entry has two bodies: one for `sm_90a` (`wgmma`) and one for every other
/// architecture (`mma.sync`); the instance asks for the largest shared memory of them all.
///
/// `archs` (a config's `archs = [...]`, empty for all): the device architectures whose builds
/// have the entries; a build for another one has neither the entries nor their manifest
/// records, and launching them there is [`kernel_runtime::LaunchError::MissingEntry`] (the
/// autotuner skips such configs).
pub fn entry(k: &Kernel, entry_name: &str, vals: &HashMap<String, i64>, (num_warps, num_stages, maxnreg): (usize, usize, Option<u32>), archs: &[String]) -> Result<DeviceEntry, plan::PlanError> {
    let mut folded = fold::fold_static_ifs(k, vals);
    multiples::drop_proven_hints(&mut folded, vals);
    alias::inline_scalar_aliases(&mut folded);
    accumulate::fuse_accumulation(&mut folded);
    let inst = |split: bool| plan::Instance { vals, num_warps, num_stages, split, maxnreg };
    let folded = step_pointers(folded, &inst(false));
    let k = &folded;
    let only = targets_of(archs);
    let plain = entry_fn(k, entry_name, &inst(false), only)?;
    if plain.split_bytes == 0 {
        return Ok(plain);
    }
    let split = entry_fn(k, &format!("{entry_name}__split"), &inst(true), only)?;
    debug_assert_eq!(plain.tma, split.tma);
    let tokens = [plain.tokens, split.tokens].into_iter().collect();
    let plans = plain.plans.into_iter().chain(split.plans).collect();
    Ok(DeviceEntry { tokens, shared_bytes: plain.shared_bytes.max(split.shared_bytes), tma: plain.tma, split_bytes: split.split_bytes, hidden: plain.hidden, split_hidden: split.hidden, plans })
}

/// `k` with the operand pointers of its K loops stepped (`stepped.rs`) where that lets the
/// software pipeliner take the loop: the loops the rewrite changes are planned, and only those
/// the plan then pipelines keep the change (a loop it still runs as written keeps the copies
/// ahead that pointers recomputed from its variable allow).
pub(super) fn step_pointers(k: Kernel, inst: &plan::Instance<'_>) -> Kernel {
    let (all, loops) = stepped::step_operand_pointers(&k, None);
    if loops.is_empty() {
        return k;
    }
    let Ok(p) = plan::plan(&all, inst, Target::Sm80) else { return k };
    let keep: std::collections::HashSet<LocalId> = loops.iter().copied().filter(|v| matches!(p.schedule(*v), Schedule::Pipelined(_))).collect();
    drop(p);
    if keep.is_empty() {
        return k;
    }
    if keep.len() == loops.len() {
        return all;
    }
    stepped::step_operand_pointers(&k, Some(&keep)).0
}

/// The bodies of one entry: its plan and the code emitted from it, for each target it has a
/// body for (Sm80 first).
type Bodies<'a> = Vec<(DevicePlan<'a>, TokenStream, usize)>;

/// Plans and emits the body of each target of one entry: the `mma.sync` body every architecture
/// but sm_90a runs, and, when a `dot` can use `wgmma`, the sm_90a body (alone for a split entry
/// with one: see [`entry_fn`]).
fn bodies<'a>(k: &'a Kernel, inst: &plan::Instance<'a>) -> Result<Bodies<'a>, plan::PlanError> {
    let mut out = Vec::new();
    for target in [Target::Sm80, Target::Sm90a] {
        match fitting_body(k, inst, target)? {
            Some(b) => out.push(b),
            None => break,
        }
    }
    Ok(out)
}

/// The plan and body of `target` for `inst`, with its dynamic shared memory (`None` for an
/// sm_90a plan without `wgmma`, which has no body of its own); planned again with one stage
/// fewer while the body needs more shared memory than a block may have. The plan sizes its
/// loops' buffers to fit, but the temporaries of the statements inside a loop that copies ahead
/// (a `dot` whose result is added under a mask, for instance) are known only once the body is
/// emitted.
fn fitting_body<'a>(k: &'a Kernel, inst: &plan::Instance<'a>, target: Target) -> Result<Option<(DevicePlan<'a>, TokenStream, usize)>, plan::PlanError> {
    let mut stages = inst.num_stages;
    loop {
        let at = plan::Instance { num_stages: stages, ..*inst };
        let p = plan::plan(k, &at, target)?;
        if target == Target::Sm90a && !p.uses_wgmma() {
            return Ok(None);
        }
        let mut g = DevGen::new(&p);
        let body = g.body(&k.body);
        let smem = g.smem.max();
        drop(g);
        if smem <= plan::smem::SMEM_LIMIT || stages <= 1 {
            return Ok(Some((p, body, smem)));
        }
        stages -= 1;
    }
}

/// The one target a config's `archs` leave, if they leave one (`None`: every target).
fn targets_of(archs: &[String]) -> Option<Target> {
    match archs {
        [a] if a == Target::Sm90a.name() => Some(Target::Sm90a),
        [a] if a == Target::Sm80.name() => Some(Target::Sm80),
        _ => None,
    }
}

/// One entry of an instance (see [`entry`]); with `inst.split`, the version for split launches.
/// The plain version reports in `split_bytes` whether a split one exists. `only`: the one target
/// whose builds have the entry.
fn entry_fn(k: &Kernel, entry_name: &str, inst: &plan::Instance<'_>, only_target: Option<Target>) -> Result<DeviceEntry, plan::PlanError> {
    let bodies = bodies(k, inst)?;
    let d = &bodies[0].0.d;
    let params = k.params.iter().map(|p| {
        let id = param_ident(&p.name);
        match p.kind {
            ParamKind::Ptr(dt) => {
                let e = dev_dtype(dt);
                quote!(#id: *mut #e)
            }
            ParamKind::Scalar(dt) => {
                let e = dev_dtype(dt);
                quote!(#id: #e)
            }
        }
    });
    let name = format_ident!("{}", entry_name);
    // The tensor maps are the sm_90a plan's (the emitted body copies with exactly those).
    let tma = bodies.get(1).map(|b| b.0.tensor_maps.clone()).unwrap_or_default();
    let hidden = plan::abi::hidden_params(k, !tma.is_empty(), inst.split);
    let params: Vec<TokenStream> = params.chain(hidden.iter().map(|h| h.param(k))).collect();
    let split_bytes = bodies[0].0.split_loop.as_ref().map_or(0, |sl| 4 * bodies.iter().map(|b| b.0.split_floats(sl)).max().unwrap_or(0));
    let split_block = inst.split.then(|| quote!(let __sk: #d::SplitBlock = #d::split_block(__sk_dp, __sk_parts);));
    // Each tensor map's descriptor is fetched from global memory at the start (one lane per
    // valid map), while the block works out its tile: the first copies do not wait for it.
    let maps = tma.len();
    let prefetch = (maps > 0).then(|| quote!(if __tid < #maps && (__tmask >> __tid) & 1 != 0 { #d::prefetch_tensormap(__tma.add(__tid * 128)); }));
    let only = only_cfg(&k.name);
    let function = |cfg: TokenStream, body: &TokenStream, prefetch: Option<&TokenStream>| {
        quote! {
            #cfg
            #only
            #[no_mangle]
            #[allow(unused_mut, unused_variables, unused_assignments, unused_parens, unused_unsafe, non_snake_case, unreachable_code, clippy::all)]
            pub unsafe extern "ptx-kernel" fn #name(#(#params,)*) {
                unsafe {
                    #split_block
                    let __tid: usize = #d::thread_idx() as usize;
                    let __lane: usize = __tid % 32;
                    let __warp: usize = __tid / 32;
                    let __smem: *mut u8 = #d::smem();
                    #prefetch
                    #body
                }
            }
        }
    };
    // The split entry of an instance with a Hopper body exists for sm_90a only, where split
    // launches were measured (on sm_80 the 128x256 tile's `mma.sync` body has no register to
    // spare for the split loop's start); elsewhere launches run the plain entry.
    let hopper_only = inst.split && bodies.len() > 1;
    let shared = bodies.iter().map(|b| b.2).max().unwrap_or(0);
    let keep = |t: Target| only_target.is_none_or(|o| o == t) && (!hopper_only || t == Target::Sm90a);
    let kept: Vec<Target> = [Target::Sm80, Target::Sm90a].into_iter().filter(|t| keep(*t)).collect();
    if kept.is_empty() {
        // A split entry for sm_90a only, of a config for sm_80 only.
        return Ok(DeviceEntry { tokens: quote!(), shared_bytes: shared, tma, split_bytes, hidden, split_hidden: vec![], plans: vec![] });
    }
    let tokens = match &bodies[..] {
        [(_, body, ..), (_, hb, ..)] => {
            let hopper_fn = keep(Target::Sm90a).then(|| function(Target::Sm90a.cfg(), hb, prefetch.as_ref()));
            let other_fn = keep(Target::Sm80).then(|| function(Target::Sm80.cfg(), body, None));
            quote!(#hopper_fn #other_fn)
        }
        _ => function(only_target.map(Target::cfg).unwrap_or_default(), &bodies[0].1, None),
    };
    let meta_cfg = (kept.len() == 1).then(|| kept[0].cfg());
    let meta = entry_metadata(k, entry_name, inst.vals, (inst.num_warps, inst.num_stages, inst.maxnreg), shared);
    // The entry of a kernel named `r#type` is `r#type`: `__KERNEL_META_r#type` is no identifier.
    let meta_name = format_ident!("__KERNEL_META_{}", entry_name.trim_start_matches("r#"));
    let bytes = proc_macro2::Literal::byte_string(meta.as_bytes());
    let len = meta.len();
    let tokens = quote! {
        #tokens
        #meta_cfg
        #only
        #[no_mangle]
        #[used]
        #[allow(non_upper_case_globals)]
        pub static #meta_name: [u8; #len] = *#bytes;
    };
    let plans = bodies.iter().map(|b| (format!("{entry_name}.{}", b.0.target.name()), b.0.to_string())).collect();
    Ok(DeviceEntry { tokens, shared_bytes: shared, tma, split_bytes, hidden, split_hidden: vec![], plans })
}
