//! Tests of the device lowering that need no GPU: which code shape each kernel gets (the GPU
//! test suite checks the numbers it computes).

use super::chunks::Along;
use super::*;
use crate::kernel::LOWERED;

/// Runs `#[kernel(attr)]` on `src` and returns the expansion's text, without the entries of
/// split launches (see `expand_all`), and its instances.
fn expand(attr: &str, src: &str) -> (String, Vec<(Kernel, HashMap<String, i64>, usize, usize)>) {
    let (out, inst) = expand_all(attr, src);
    (strip_split_entries(&out), inst)
}

/// [`expand`] with every entry.
fn expand_all(attr: &str, src: &str) -> (String, Vec<(Kernel, HashMap<String, i64>, usize, usize)>) {
    let f: syn::ItemFn = syn::parse_str(src).expect("test kernel parses");
    let out = crate::kernel::expand(attr.parse().unwrap(), f, &HashMap::new()).to_string();
    assert!(!out.contains("compile_error"), "the test kernel has errors: {out}");
    (out, LOWERED.with(|l| l.take()))
}

/// The expansion without the `<entry>__split` functions and their manifest records, so that
/// tests of the plain entries count what they contain.
fn strip_split_entries(out: &str) -> String {
    let mut s = out.to_string();
    while let Some(name_at) = s.find("__split (") {
        // The function: from its attributes (`# [cfg (..)]` of its body's architecture, if
        // any, and `# [no_mangle]`) to the brace that closes its body.
        let mut start = s[..name_at].rfind("# [no_mangle]").expect("an entry's attributes");
        if let Some(cfg) = s[..start].rfind("# [cfg (") {
            if s[cfg..start].trim_end().ends_with(")]") && !s[cfg..start].contains('{') {
                start = cfg;
            }
        }
        let open = name_at + s[name_at..].find('{').expect("a body");
        let mut depth = 0usize;
        let mut end = open;
        for (i, c) in s[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        s.replace_range(start..end, "");
    }
    while let Some(meta) = s.find("__split : [u8") {
        let mut start = s[..meta].rfind("# [no_mangle]").expect("the record's attributes");
        if s[..start].trim_end().ends_with("# [cfg (target_feature = \"sm_90a\")]") {
            start = s[..start].rfind("# [cfg").unwrap();
        }
        let end = meta + s[meta..].find(" ;").expect("the record's end") + 2;
        s.replace_range(start..end, "");
    }
    s
}

/// The dynamic shared memory of the (first) instance, from its manifest record.
fn shared_bytes(out: &str) -> usize {
    let at = out.find("dynamic_shared_bytes").expect("manifest record") + "dynamic_shared_bytes".len();
    let digits: String = out[at..].chars().skip_while(|c| !c.is_ascii_digit()).take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap()
}

fn matmul(stages: usize, block_k: usize, extra_in_loop: &str) -> String {
    format!(
        r#"
        #[autotune(configs = [config(BM = 64, BN = 64, BK = {block_k}, num_warps = 4, num_stages = {stages})], key = [M])]
        fn mm<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<f16>, b_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {{
            let offs_m = (program_id(0) * BM + arange(0, BM)) % M;
            let offs_n = (program_id(1) * BN + arange(0, BN)) % N;
            let offs_k = arange(0, BK);
            let mut a_ptrs = a_ptr + (offs_m.as_col() * K + offs_k.as_row());
            let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());
            let mut acc = zeros::<f32>([BM, BN]);
            for k in 0..cdiv(K, BK) {{
                let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);
                let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);
                acc = dot(a, b, acc);
                a_ptrs += BK;
                b_ptrs += BK * N;
                {extra_in_loop}
            }}
            let c_ptrs = c_ptr + offs_m.as_col() * N + offs_n.as_row();
            let c = acc.to::<f16>();
            store(c_ptrs, c);
        }}"#
    )
}

#[test]
fn the_seed_k_loop_is_software_pipelined() {
    let (out, inst) = expand("", &matmul(3, 32, ""));
    assert_eq!(inst.len(), 1);
    // Three buffers: two groups in flight while the tensor cores work on the third.
    assert!(out.contains("cp_async_wait_group :: < 1u32 >"), "no pipelined wait");
    assert!(out.contains("cp_async_commit"));
    assert!(out.contains("ldmatrix_x4_trans"));
    assert!(out.contains("mma_f16"));
    // Shared memory: 3 stages of A (64x32) and B (32x64) tiles in f16, and the 16-byte word
    // of the bounds proof that selects the unchecked copy of the loop. The sm_90a body (whose
    // size the entry asks for) has a fourth buffer, for the `wgmma` group left in flight, and one
    // 8-byte `mbarrier` per buffer for its tensor-map copies.
    assert_eq!(shared_bytes(&out), 4 * 8192 + 32 + 16);
    assert!(out.contains("__proved"));
}

#[test]
fn num_stages_drives_the_number_of_buffers() {
    let (out, _) = expand("", &matmul(5, 32, ""));
    assert!(out.contains("cp_async_wait_group :: < 3u32 >"));
    assert_eq!(shared_bytes(&out), 6 * 8192 + 48 + 16);
    // One stage: copy, wait for it, compute (the sm_90a body has two buffers: its copies of the
    // next iteration overlap the `wgmma` of this one).
    let (out, _) = expand("", &matmul(1, 32, ""));
    assert!(out.contains("cp_async_wait_group :: < 0 >"));
    assert_eq!(shared_bytes(&out), 2 * 8192 + 16 + 16);
}

#[test]
fn stages_shrink_to_fit_shared_memory() {
    // 64x512 and 512x64 f16 tiles take 128 KiB per stage: only one fits in 227 KiB.
    let (out, _) = expand("", &matmul(4, 512, ""));
    assert!(out.contains("cp_async_wait_group :: < 0 >"));
    assert_eq!(shared_bytes(&out), 131072 + 16);
}

#[test]
fn a_loop_with_other_statements_is_lowered_as_written() {
    let (out, _) = expand("", &matmul(3, 32, "store(c_ptr, 1.0);"));
    assert!(!out.contains("cp_async_wait_group"), "a store in the loop must keep program order");
    // Still a tensor-core dot, staged in one buffer per iteration.
    assert!(out.contains("mma_f16") && out.contains("cp_async_wait_all"));
}

#[test]
fn swizzle_spreads_the_rows_of_an_ldmatrix_over_all_banks() {
    for inner in [16usize, 32, 64, 128, 256] {
        let (per_line, period) = DevGen::swizzle(inner).unwrap();
        let chunks = inner / 8;
        for c in 0..chunks {
            // The 8 rows an 8x8 matrix reads at logical chunk `c` use 8 distinct 16-byte bank groups.
            let mut groups: Vec<usize> = (0..8)
                .map(|r| {
                    let phys = c ^ ((r / per_line) % period);
                    assert!(phys < chunks);
                    ((r * inner + phys * 8) * 2 / 16) % 8
                })
                .collect();
            groups.sort();
            groups.dedup();
            assert_eq!(groups.len(), 8, "inner {inner}, chunk {c}");
        }
    }
    assert!(DevGen::swizzle(8).is_none() && DevGen::swizzle(48).is_none());
}

/// The chunk analysis of every masked load of the first instance of `src`, in program order.
fn mask_analysis(src: &str) -> Vec<(Along, bool)> {
    let (_, inst) = expand("BLOCK = [64]", src);
    let (k, vals, warps, stages) = &inst[0];
    let g = DevGen::new(k, vals, 32 * warps, *stages, false);
    k.exprs
        .iter()
        .enumerate()
        .filter_map(|(id, e)| match e.kind {
            ExprKind::Load { mask: Some(m), .. } => {
                let moves = g.shapes[m].last() == g.shapes[id].last();
                Some((g.along(m, moves), g.load_chunk_all(id, m, &quote!(__f0), 8).is_some()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn chunk_masks_are_tested_at_their_ends_when_monotone() {
    let got = mask_analysis(
        r#"fn k<const BLOCK: i32>(x: Ptr<f32>, y: Ptr<f32>, n: i32) {
            let rows = arange(0, BLOCK);
            let cols = program_id(0) * BLOCK + arange(0, BLOCK);
            let a = load(x + rows.as_col() * n + cols.as_row(), cols.as_row() < n, 0.0);
            let b = load(x + rows.as_col() * n + cols.as_row(), rows.as_col() < n, 0.0);
            let c = load(x + rows.as_col() * n + cols.as_row(), (rows.as_col() < n) & (cols.as_row() >= 1), 0.0);
            let d = load(x + rows.as_col() * n + cols.as_row(), cols.as_row() % 3 == 0, 0.0);
            let e = load(x + rows.as_col() * n + cols.as_row(), n > cols.as_row() * 2, 0.0);
            store(y + rows.as_col() * n + cols.as_row(), a + b + c + d + e);
        }"#,
    );
    // a: increasing column vs constant; b: constant along a row; c: both; d, e: not monotone by one.
    assert_eq!(got, vec![(Along::Other, true), (Along::Const, true), (Along::Other, true), (Along::Other, false), (Along::Other, false)]);
}

fn vector_add(block: usize, warps: usize) -> String {
    let (out, _) = expand(
        "",
        &format!(
            r#"#[autotune(configs = [config(BLOCK = {block}, num_warps = {warps}, num_stages = 1)], key = [n])]
            fn add<const BLOCK: i32>(x: Ptr<f32>, y: Ptr<f32>, out: Ptr<f32>, n: i32) {{
                let offs = program_id(0) * BLOCK + arange(0, BLOCK);
                let mask = offs < n;
                let x = load(x + offs, mask);
                let y = load(y + offs, mask);
                store(out + offs, x + y, mask);
            }}"#
        ),
    );
    out
}

#[test]
fn elementwise_loads_and_stores_are_vectorized_when_every_thread_has_whole_chunks() {
    // 1024 elements over 128 threads: two chunks of 4 f32 (16 bytes) per thread.
    let out = vector_add(1024, 4);
    assert_eq!(out.matches("load_vec :: < f32 , 4usize >").count(), 2, "both loads");
    assert_eq!(out.matches("store_vec :: < f32 , 4usize >").count(), 1);
    // 256 elements over 128 threads: chunks of 2 (8 bytes).
    let out = vector_add(256, 4);
    assert!(out.contains("load_vec :: < f32 , 2usize >") && out.contains("store_vec :: < f32 , 2usize >"));
    // 64 elements over 64 threads: one element per access.
    let out = vector_add(64, 2);
    assert!(!out.contains("load_vec") && !out.contains("store_vec"));
}

#[test]
fn the_mma_epilogue_stores_column_pairs() {
    let (out, _) = expand("", &matmul(3, 32, ""));
    assert!(out.contains("store_vec :: < :: kernel_std :: __private :: device :: F16 , 2usize >"));
}

#[test]
fn hopper_bodies_use_wgmma_with_operands_in_shared_memory() {
    let (out, _) = expand("", &matmul(3, 32, ""));
    // Two bodies: `wgmma` for sm_90a, `mma.sync` for the others.
    assert!(out.contains("cfg (target_feature = \"sm_90a\")") && out.contains("cfg (not (target_feature = \"sm_90a\"))"));
    // 64x64 over one warpgroup: one m64n64k16 per 16-wide K step, two steps per BLOCK_K = 32.
    assert_eq!(out.matches("wgmma_m64n64k16_f16 ::").count(), 2 * 3, "two K steps in the checked, the unchecked and the tensor-map loop");
    assert!(out.contains("fence_proxy_async"), "the copies must be visible to the async proxy");
    assert!(out.contains("wgmma_wait :: < 0 >") && out.contains("wgmma_tie_n64"));
    assert!(out.contains("mma_f16"), "the other body keeps mma.sync");
    // Three buffers: one wgmma group in flight across iterations, copies one iteration ahead.
    assert!(out.contains("wgmma_wait :: < 1 >"));
    let (two, _) = expand("", &matmul(1, 32, ""));
    assert!(two.contains("wgmma_wait :: < 0 >") && !two.contains("wgmma_wait :: < 1 >"), "two buffers: no wgmma overlap");
    // Two warps are no warpgroup: one body.
    let two_warps = matmul(3, 32, "").replace("num_warps = 4", "num_warps = 2");
    let (out, _) = expand("", &two_warps);
    assert!(!out.contains("wgmma") && !out.contains("sm_90a"));
}

#[test]
fn pipelined_loops_count_buffers_round_and_build_descriptors_once() {
    let (out, _) = expand("", &matmul(3, 32, ""));
    // No division by the buffer count in a loop: the buffers of iterations `__ci` and
    // `__ci + ahead` (and the barrier parity) are counters that wrap at 4 buffers.
    assert!(!out.contains("% 4i64") && !out.contains("/ 4i64"), "a modulo of the iteration is back");
    assert!(out.contains("__cbu = if __cbu + 1 == 4u32 { 0 } else { __cbu + 1 }"), "the cp.async loops' counter");
    assert!(out.contains("if __cbu + 1 == 4u32 { __cbu = 0 ; __par ^= 1 ;"), "the tensor-map loop's counter and parity");
    assert!(out.contains("mbarrier_wait (__bars + __cbu * 8 , __par)"));
    // The wgmma descriptors of buffer 0 are built once; the loop adds the buffer's offset.
    assert_eq!(out.matches("let (__da0 , __db0) : (u64 , u64)").count(), 1);
    assert!(out.contains("let __da : u64 = __da0 + ((__cb as u32) * 512u32) as u64"), "8192-byte buffers: 512 16-byte units");
    // The tensor-map coordinates are 32-bit (the launch checked the extents).
    assert!(out.contains("(__it as i32) . wrapping_mul"));
}

#[test]
fn f16_casts_of_accumulators_convert_column_pairs_at_once() {
    // `let c = acc.to::<f16>()` (materialized): each pair of adjacent columns is converted by one
    // `cvt.rn.f16x2.f32`, in both bodies (64x64 over 4 warps: 32 slots per thread, 16 pairs),
    // and in the sm_90a body's out-of-line copy of the epilogue (after the `cp.async` fallback).
    let (out, _) = expand("", &matmul(3, 32, ""));
    assert_eq!(out.matches("pack_f16x2").count(), 3 * 16, "{}", out.matches("pack_f16x2").count());
    // An f32 result has nothing to pack.
    let f32_out = matmul(3, 32, "").replace("c_ptr: Ptr<f16>", "c_ptr: Ptr<f32>").replace("let c = acc.to::<f16>();", "let c = acc;");
    let (out, _) = expand("", &f32_out);
    assert!(!out.contains("pack_f16x2"));
}

#[test]
fn tiles_192_wide_use_one_m64n192_wgmma_per_k_step() {
    let wide = matmul(3, 64, "").replace("BM = 64, BN = 64", "BM = 128, BN = 192").replace("num_warps = 4", "num_warps = 8");
    let (out, _) = expand("", &wide);
    // Two warpgroups of 64 rows each, all 192 columns (three 64-column blocks of B): 4 K steps of
    // 16 in each of the three loop versions.
    assert_eq!(out.matches("wgmma_m64n192k16_f16 ::").count(), 4 * 3);
    assert!(out.contains("wgmma_tie_n192"));
    // 48 columns: no wgmma shape (B's rows would be 96 bytes, no swizzle width); mma.sync only.
    let narrow = matmul(3, 32, "").replace("BN = 64", "BN = 48");
    let (out, _) = expand("", &narrow);
    assert!(!out.contains("wgmma_m64") && out.contains("mma_f16"));
}

#[test]
fn wgmma_b_tiles_are_stored_in_swizzled_column_blocks() {
    // B (row-major [K, N]) of a `wgmma` dot goes in column blocks one 128-byte swizzle pattern
    // wide; A and every `mma.sync` operand stay row-major. (The GPU suite checks the numbers
    // of every matmul config, with N = 32 to 256, against a float64 reference.)
    let lay = Layout::Mma { wm: 1, wn: 1, tm: 1, tn: 16, n: 128, wg: true };
    let b = Tile::of(lay, 32, 128);
    assert_eq!(b.block, 64);
    let code = b.index(quote!(f)).to_string();
    assert!(code.contains("(__tc / 64usize) * 32usize * 64usize"), "{code}");
    assert_eq!(Tile::of(lay, 32, 64).block, 64);
    assert_eq!(Tile::of(lay, 64, 32).block, 32);
    let sync = Layout::Mma { wm: 2, wn: 2, tm: 1, tn: 8, n: 128, wg: false };
    assert_eq!(Tile::of(sync, 32, 128).block, 128);
}

/// The tensor maps of the (first) instance's entry.
fn tma_of(src: &str) -> (String, Vec<TmaDesc>) {
    let (out, inst) = expand("", src);
    let (k, vals, warps, stages) = &inst[0];
    (out, entry(k, "mm", vals, *warps, *stages).tma)
}

#[test]
fn hopper_k_loops_of_two_warpgroups_or_deep_tiles_use_reader_barriers() {
    for (src, warps) in [
        (matmul(3, 32, "").replace("num_warps = 4", "num_warps = 8").replace("BM = 64,", "BM = 128,"), 8u32),
        (matmul(3, 128, ""), 4),
    ] {
        let (out, _) = tma_of(&src);
        // Two barriers per buffer (4 buffers): copies landed (one arrival, thread 0's), and
        // readers done (one arrival per warp).
        assert_eq!(out.matches(":: mbarrier_init (").count(), 8);
        assert_eq!(out.matches("as u32 , 1u32) ;").count(), 4);
        assert_eq!(out.matches(&format!("as u32 , {warps}u32) ;")).count(), 4);
        // (After the loop, and at the end of the `cp.async` fallback, which does not join it.)
        assert_eq!(out.matches(":: mbarrier_inval (").count(), 2 * 8);
        // No block barrier in the loop: after `wgmma_wait::<1>` each warp's lane 0 arrives on the
        // reader barrier of the buffer whose `wgmma` group it finished, and thread 0 waits for all
        // of them before refilling it with the iteration four ahead (the prologue fills all four).
        let arrive = "if __tid % 32 == 0 { :: kernel_std :: __private :: device :: mbarrier_arrive (__ebars + __nbu * 8) ; }";
        let at = out.find(arrive).expect("arrival");
        let wait1 = out[..at].rfind("wgmma_wait :: < 1 > ()").expect("wgmma_wait::<1> before the arrival");
        assert!(at - wait1 < 200, "the arrival follows the wait");
        assert!(out.contains("let __nx : i64 = __ci - 1 + 4i64 ;"));
        assert!(out.contains(":: mbarrier_wait (__ebars + __nbu * 8 , __ppar) ;"));
        assert!(out.contains("while __pi < 4i64"));
        // A block barrier only after a fix-up (uniform), so every fix-up precedes every `wgmma`.
        let loop_start = out[..at].rfind("while __ci < __n").unwrap();
        assert_eq!(out[loop_start..at].matches("bar_sync ()").count(), 1, "{}", &out[loop_start..at]);
        assert!(out[loop_start..at].contains("if __fix { :: kernel_std :: __private :: device :: bar_sync () ; }"));
    }
}

#[test]
fn hopper_k_loops_copy_tiles_with_tensor_maps() {
    let (out, tma) = tma_of(&matmul(3, 32, ""));
    // A (64x32): rows K apart (parameter 5), one 64x32 box with the 64-byte swizzle; B (32x64):
    // rows N apart (parameter 4), one 32x64 box with the 128-byte swizzle; column stride 1.
    assert_eq!(
        tma,
        vec![
            TmaDesc { ptr: 0, row_stride: 5, col_stride: None, box_inner: 32, box_rows: 64, swizzle: 64 },
            TmaDesc { ptr: 1, row_stride: 4, col_stride: None, box_inner: 64, box_rows: 32, swizzle: 128 },
        ]
    );
    // The entry takes the maps' address and validity mask after its other hidden parameters.
    assert!(out.contains("__tag : u32 , __tma : * const u8 , __tmask : u32"));
    // Lanes 0 and 1 start fetching the valid maps' descriptors before anything else, and only in
    // the sm_90a body (the other has no maps).
    let prefetch = "if __tid < 2usize && (__tmask >> __tid) & 1 != 0 { :: kernel_std :: __private :: device :: prefetch_tensormap (__tma . add (__tid * 128)) ; }";
    assert_eq!(out.matches(prefetch).count(), 1, "{}", &out[..out.find("program_id").unwrap_or(0)]);
    let (hopper, other) = (out.find("target_feature = \"sm_90a\"").unwrap(), out.find("not (target_feature = \"sm_90a\")").unwrap());
    let at = out.find(prefetch).unwrap();
    assert!(hopper < at && at < other, "{hopper} {at} {other}");
    assert!(at < out[hopper..].find("program_id").unwrap() + hopper, "before the block's first statement");
    // Thread 0 copies each operand's box (in the prologue and in the loop), announcing the
    // stage's 8192 bytes on the buffer's barrier; every thread waits for the barrier's phase.
    assert_eq!(out.matches("tma_load_2d").count(), 2 * 2);
    assert!(out.contains("mbarrier_arrive_expect_tx (__bar , 8192u32)"));
    assert!(out.contains("mbarrier_wait"));
    assert_eq!(out.matches(":: mbarrier_init (").count(), 4, "one barrier per buffer (num_stages + 1)");
    // One warpgroup and 32-deep tiles: a block barrier in every iteration, after which thread 0
    // copies the iteration two ahead (the prologue fills two buffers), and no reader barriers.
    assert!(out.contains("let __nx : i64 = __ci + 2i64 ;") && out.contains("while __pi < 2i64"));
    assert!(!out.contains("mbarrier_arrive (") && !out.contains("__ebars"));
    // The map is used only when the block proves its accesses match it, and masked elements
    // are given `other` after the copy.
    assert!(out.contains("__tma_go") && out.contains("let __tok0 : bool = __tin0 &&") && out.contains("__fx = true"));
    // Thread 0 issues the first stages' copies as soon as the box coordinates are known (valid
    // maps), before the rows are checked and the vote; whether it did follows from values every
    // thread has (`__spec`, uniform), so that a block taking a `cp.async` version waits for those
    // copies (phase 0 of each filled buffer's barrier) first.
    assert!(out.contains("let __spec : bool = __n > 0 && __tmo0 && __tmo1"));
    let (spec, rows) = (out.find("if __tid == 0 && __spec").unwrap(), out.find("let __tok0 : bool = __tin0 &&").expect("row checks"));
    assert!(spec < rows, "the row checks come after the speculative copies");
    let wait = out.find(", 0) ; __pi += 1 ;").expect("the wait loop over the filled buffers");
    let guard = out[..wait].rfind("if __spec {").expect("the wait is guarded by `__spec`");
    assert!(out[guard..wait].contains("while __pi < 2i64 && __pi < __n"), "{}", &out[guard..wait]);
    // The seed's masks are linear in `k`: tested at the first and last iteration before the loop
    // (two rolled loops per operand), so that the K loop skips the fix-up when nothing is masked.
    assert_eq!(out.matches("__mall = __mall &&").count(), 2 * 2);
    // When they are not (a K tail), they are also tested at the first and the next-to-last
    // iteration: if nothing is masked there, only the last iteration runs the fix-up.
    assert_eq!(out.matches("__mmid = __mmid &&").count(), 2 * 2);
    assert_eq!(out.matches("if ! __mall && __n >= 2").count(), 2);
    assert!(out.contains("let __fix : bool = ! __nofix && (! __fixlast || __ci + 1 == __n) ;"));
    // The votes are block-wide ANDs, one barrier each (`bar.red.and`), no shared-memory words.
    assert!(out.contains("let __tma_go : bool = :: kernel_std :: __private :: device :: bar_and (true && __tok0 && __tok1) ;"));
    assert!(out.contains("let __nofix : bool = :: kernel_std :: __private :: device :: bar_and (__mall) ;"));
    assert!(out.contains("let __fixlast : bool = :: kernel_std :: __private :: device :: bar_and (__mmid) ;"));
    // Rows are checked by the threads after warp 0 (which issues the first copies): A's 64 rows
    // by threads 32..96, B's 32 by threads 96..128 (a rotation of the thread index).
    assert!(out.contains("let mut __r : usize = (__tid + 96usize) % 128usize ;"), "A's rows start at thread 32");
    assert!(out.contains("let mut __r : usize = (__tid + 32usize) % 128usize ;"), "B's rows start at thread 96");
    // The last box may reach past the operand's view (a K tail that ends the buffer): allowed
    // when every element out there is masked in the last iteration (each thread its rows, from
    // the view's last column or, for rows below the view, from the row's start).
    assert_eq!(out.matches("if __cL + ").count(), 2);
    assert_eq!(out.matches("let __j0 : i64 = if __rL + (__r as i64) >= __h { 0 } else { __w - __cL } ;").count(), 2);
    assert!(out.contains("__ok = __ok && ! ("));
    assert!(out.contains("__inside (__rl - __sq) && __starts (__rl)") && out.contains("__cl - __st +"));
    // A mask that is not linear in `k` gets the fix-up test in every iteration.
    let quadratic = matmul(3, 32, "").replace("let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);", "let a = load(a_ptrs, offs_k.as_row() < K - k * k * BK, 0.0);");
    let (out, _) = expand("", &quadratic);
    assert_eq!(out.matches("__mall = __mall &&").count(), 2, "only B's mask is linear");
    assert!(out.contains("__mall = false ; __mmid = false ;"));

    // B 32x128 goes in two 64-column boxes per stage.
    let wide = matmul(3, 32, "").replace("BN = 64", "BN = 128");
    let (out, tma) = tma_of(&wide);
    assert_eq!(tma[1], TmaDesc { ptr: 1, row_stride: 4, col_stride: None, box_inner: 64, box_rows: 32, swizzle: 128 });
    assert_eq!(out.matches("tma_load_2d").count(), 2 * 3);

    // Explicit strides: the column stride parameter is listed for the launch to check.
    let strided = matmul(3, 32, "")
        .replace("M: i32, N: i32, K: i32)", "M: i32, N: i32, K: i32, sam: i32, sak: i32)")
        .replace("offs_m.as_col() * K + offs_k.as_row()", "offs_m.as_col() * sam + offs_k.as_row() * sak");
    let (_, tma) = tma_of(&strided);
    assert_eq!(tma[0], TmaDesc { ptr: 0, row_stride: 6, col_stride: Some(7), box_inner: 32, box_rows: 64, swizzle: 64 });

    // Strides that are no parameters (a literal row stride): no maps, no tensor-map loop.
    let literal = matmul(3, 32, "").replace("offs_m.as_col() * K + offs_k.as_row()", "offs_m.as_col() * 64 + offs_k.as_row()");
    let (out, tma) = tma_of(&literal);
    assert!(tma.is_empty() && !out.contains("tma_load_2d") && !out.contains("__tmask"), "{tma:?}");
    // Two warps (no warpgroup): no maps either.
    let (_, tma) = tma_of(&matmul(3, 32, "").replace("num_warps = 4", "num_warps = 2"));
    assert!(tma.is_empty());
}

/// Whether each store's pointer block of the first instance of `src` has a per-column
/// increment (`col_step`), in program order.
fn store_steps(src: &str) -> Vec<bool> {
    let (_, inst) = expand("BLOCK = [64]", src);
    let (k, vals, warps, stages) = &inst[0];
    let g = DevGen::new(k, vals, 32 * warps, *stages, false);
    k.body
        .iter()
        .filter_map(|s| match s {
            Stmt::Store { ptr, .. } => Some(g.col_step(*ptr, true, &At::Flat(quote!(0usize))).is_some()),
            _ => None,
        })
        .collect()
}

#[test]
fn pointer_blocks_affine_along_rows_have_a_column_step() {
    let got = store_steps(
        r#"fn k<const BLOCK: i32>(y: Ptr<f32>, n: i32) {
            let rows = arange(0, BLOCK);
            let cols = program_id(0) * BLOCK + arange(0, BLOCK);
            let v = zeros::<f32>([BLOCK, BLOCK]);
            store(y + rows.as_col() * n + cols.as_row(), v);
            store(y + n * rows.as_col() + n * cols.as_row(), v);
            store(y + (rows.as_col() - cols.as_row() * 2), v);
            store(y + cols.as_row() * cols.as_row() + rows.as_col(), v);
            store(y + (cols.as_row() % 7 + rows.as_col()), v);
        }"#,
    );
    // Unit step; a run-time step (n); step -2; a product of two varying factors; a remainder.
    assert_eq!(got, vec![true, true, true, false, false]);
}

#[test]
fn mma_epilogue_stores_skip_per_pair_tests_when_rows_are_proven_contiguous() {
    // The seed's epilogue: rows and columns of the tile without wrapping, masked at the edges.
    let seed = matmul(3, 32, "").replace(
        "let c_ptrs = c_ptr + offs_m.as_col() * N + offs_n.as_row();",
        "let cm = program_id(0) * BM + arange(0, BM); let cn = program_id(1) * BN + arange(0, BN); let c_ptrs = c_ptr + cm.as_col() * N + cn.as_row();",
    );
    let seed = seed.replace("store(c_ptrs, c);", "store(c_ptrs, c, (cm.as_col() < M) & (cn.as_row() < N));");
    let (out, _) = expand("", &seed);
    // Both bodies (mma.sync and wgmma) get the per-thread row test and the untested stores (the
    // wgmma body twice: its `cp.async` fallback runs its own copy of the epilogue).
    assert_eq!(out.matches("let __sfast : bool").count(), 3, "one fast path per epilogue");
    // f16 results in groups of four 8-column tiles: quads exchange pairs, 16-byte stores.
    assert_eq!(out.matches("warp_all").count(), 3, "one warp-wide test per epilogue");
    assert!(out.contains("quad_transpose"));
    assert!(out.contains("store_vec :: < u32 , 4 >"));
    // f32 results keep one 8-byte store per column pair (no exchange), still untested.
    let f32_out = seed.replace("c_ptr: Ptr<f16>", "c_ptr: Ptr<f32>").replace("let c = acc.to::<f16>();", "let c = acc;");
    let (out, _) = expand("", &f32_out);
    assert_eq!(out.matches("let __sfast : bool").count(), 3);
    assert!(!out.contains("quad_transpose"));
    assert!(out.contains("store_vec :: < f32 , 2usize >"));
    // Columns wrapped with `% N` (the test kernel's own epilogue) are not affine along a row,
    // nor is a product of two column indices: those stores keep the per-pair tests only.
    for src in [matmul(3, 32, ""), seed.replace("cn.as_row();", "cn.as_row() * cn.as_row();")] {
        let (out, _) = expand("", &src);
        assert!(!out.contains("__sfast"));
        assert!(out.contains("store_vec :: < :: kernel_std :: __private :: device :: F16 , 2usize >"));
    }
}

/// The barriers after the last K loop of the first entry body in `out`.
fn barriers_after_loop(out: &str) -> usize {
    let body = &out[..out.find("cfg (not (target_feature = \"sm_90a\"))").unwrap_or(out.len())];
    let tail = &body[body.rfind("cp_async_wait_all").expect("a pipelined loop")..];
    tail.matches("bar_sync ()").count()
}

#[test]
fn stores_after_a_pipelined_loop_and_at_the_end_need_no_barriers() {
    // The seed: the loop ends with a barrier, the activation and cast touch no memory, and the
    // store is the last statement: only the loop's own barrier.
    let (out, _) = expand("", &matmul(3, 64, ""));
    assert_eq!(barriers_after_loop(&out), 1, "{}", &out[out.rfind("cp_async_wait_all").unwrap()..][..600]);
    // A load between the loop and the store: the store waits for every thread's load first.
    let loads = matmul(3, 64, "").replace("let c = acc.to::<f16>();", "let c = (acc + load(c_ptr + offs_m.as_col() * N + offs_n.as_row()).to::<f32>()).to::<f16>();");
    let (out, _) = expand("", &loads);
    assert_eq!(barriers_after_loop(&out), 2);
    // A statement after the store: the barrier after it keeps the order.
    let more = matmul(3, 64, "").replace("store(c_ptrs, c);", "store(c_ptrs, c); store(c_ptrs, c);");
    let (out, _) = expand("", &more);
    assert_eq!(barriers_after_loop(&out), 2, "one between the stores, none after the last");
}

#[test]
fn k_tiles_deeper_than_64_use_wgmma_and_tensor_maps_in_64_column_blocks() {
    // BK = 128: A (64x128) is staged in two 64-column blocks like B, each a 64x64 box with the
    // 128-byte swizzle; B (128x64) is one 128-row box.
    let (out, tma) = tma_of(&matmul(3, 128, ""));
    assert_eq!(
        tma,
        vec![
            TmaDesc { ptr: 0, row_stride: 5, col_stride: None, box_inner: 64, box_rows: 64, swizzle: 128 },
            TmaDesc { ptr: 1, row_stride: 4, col_stride: None, box_inner: 64, box_rows: 128, swizzle: 128 },
        ]
    );
    // Three boxes per stage (two of A, one of B), in the prologue and in the loop.
    assert_eq!(out.matches("tma_load_2d").count(), 2 * 3);
    // Eight k-steps of 16; the fifth reads A's second column block (64 rows x 128 bytes =
    // 8192 bytes on: 512 in descriptor units) from its start.
    assert!(out.contains("wgmma_m64n64k16_f16"));
    assert!(out.contains("__da + 512u64"), "the second column block of A");
    assert!(out.contains("__da + 6u64"), "k-step 3: 96 bytes into the first block");
    assert!(!out.contains("__da + 8u64"), "no k-step runs past a 128-byte row");
    // The staging index of A's column blocks matches (`Tile::of`).
    let lay = Layout::Mma { wm: 1, wn: 1, tm: 1, tn: 8, n: 64, wg: true };
    assert_eq!(Tile::of(lay, 64, 128).block, 64);
}

#[test]
fn hopper_epilogues_store_whole_rows_through_shared_memory() {
    // 64x64 f16 tile of one warpgroup: each warp writes its 16 rows with `stmatrix` (8-column
    // tiles in pairs: 4 per row group), then stores them back row by row, 16 bytes per lane.
    // (The seed's store: C's offsets do not wrap, so each row is contiguous.)
    let src = matmul(3, 64, "").replace(
        "let c_ptrs = c_ptr + offs_m.as_col() * N + offs_n.as_row();",
        "let c_ptrs = c_ptr + (program_id(0) * BM + arange(0, BM)).as_col() * N + (program_id(1) * BN + arange(0, BN)).as_row();",
    );
    let (out, _) = expand("", &src);
    let hopper = &out[..out.find("cfg (not (target_feature = \"sm_90a\"))").unwrap()];
    let other = &out[out.find("cfg (not (target_feature = \"sm_90a\"))").unwrap()..];
    // (Twice: the hot path's epilogue and the `cp.async` fallback's out-of-line copy.)
    assert_eq!(hopper.matches("stmatrix_x4 (").count(), 2 * 4);
    assert!(hopper.contains("ld_shared_v4") && hopper.contains("warp_sync ()"));
    assert!(!hopper.contains("quad_transpose"), "no lane exchange on sm_90");
    // Rows of 64 f16 (128 bytes) padded by 16: 144 bytes; four warps of 16 rows.
    assert!(hopper.contains("* 144usize"), "the row pitch");
    // The other body (mma.sync, sm_80) keeps the quad exchange and 16-byte stores.
    assert!(other.contains("quad_transpose") && !other.contains("stmatrix_x4"));
}

/// Whether the expansion's entries take the hidden parameters of split launches.
fn splits(out: &str) -> bool {
    out.contains("__sk_ws : * mut f32")
}

#[test]
fn the_seed_k_loop_may_be_split_over_blocks() {
    let (all, _) = expand_all("", &matmul(3, 32, ""));
    assert!(splits(&all), "the seed's loop should be splittable");
    assert!(!splits(&strip_split_entries(&all)));
    // Two entries: the plain one, with no trace of splitting, and the one split launches run.
    let at = all.find("fn mm__c0__split (").expect("a split entry");
    let (plain, out) = (&all[..at], &all[at..]);
    assert!(plain.contains("fn mm__c0 (") && !plain.contains("__sk"));
    assert!(plain.contains("device :: program_id (0u32)"));
    // The block's program and part come first; `program_id(0)` is the program, not the block.
    assert!(out.contains("split_block (__sk_dp , __sk_parts)"));
    assert!(out.contains("(__sk . pid as i32)"));
    assert!(!out.contains("device :: program_id (0u32)"));
    // Both loop versions run the part's iterations, with the pointers moved to its first one;
    // the seed reads neither pointer block after the loop, so nothing more is kept live.
    assert!(out.contains("split_range (__n , __sk . part , __sk . parts)"));
    // Split launches run on sm_90a only: the split entry has no body for other GPUs.
    assert!(!out.contains("not (target_feature = \"sm_90a\")"));
    assert!(out.contains("# [cfg (target_feature = \"sm_90a\")] # [no_mangle] # [used]"));
    assert!(!out.contains("__sk_n - __sk_it0 - __n"));
    // A pointer block read after the loop is moved on to where the whole loop leaves it.
    let (after, _) = expand_all("", &matmul(3, 32, "").replace("let c_ptrs", "store(a_ptrs, zeros::<f16>([BM, BK]));\n let c_ptrs"));
    let after = &after[after.find("fn mm__c0__split (").unwrap()..];
    assert!(after.contains("a_ptrs_3_off = < i64 as :: kernel_std :: __private :: device :: Num > :: add (a_ptrs_3_off , :: kernel_std :: __private :: device :: cast :: < i64 , i64 > ((__sk_n - __sk_it0 - __n)"));
    assert!(!after.contains("b_ptrs_4_off = < i64 as :: kernel_std :: __private :: device :: Num > :: add (b_ptrs_4_off , :: kernel_std :: __private :: device :: cast :: < i64 , i64 > ((__sk_n - __sk_it0 - __n)"));
    // The hand-over: partials written to L2, counted, summed by the last part in part order
    // (read from L2, where no stale L1 line can hide another block's write).
    assert!(out.contains("st_cg_v4") && out.contains("ld_cg_v4") && out.contains("split_arrive"));
    assert!(out.contains("if ! __sk_last { return ; }"));
    // The runtime learns the size of one partial: a 64x64 f32 accumulator.
    assert!(all.contains("split_bytes : 16384u32"), "{}", &all[all.find("split_bytes").unwrap()..][..40]);
}

#[test]
fn loops_that_cannot_be_split_are_not() {
    let seed = matmul(3, 32, "");
    let cases = [
        // A store before the loop would be repeated by every part.
        ("store before", seed.replace("let mut acc = zeros", "store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), zeros::<f16>([BM, BN]));\n let mut acc = zeros")),
        // Partials of an accumulator that does not start at zero do not add up.
        ("nonzero start", seed.replace("zeros::<f32>([BM, BN])", "full::<f32>([BM, BN], 1.0)")),
        // Two loops.
        ("two loops", seed.replace("let c_ptrs", "for _j in 0..2 { acc = acc * 2.0; }\n let c_ptrs")),
        // A step that changes in the loop cannot be applied in bulk.
        ("varying step", seed.replace("a_ptrs += BK;", "a_ptrs += k;")),
        // Something other than the accumulation and the steps is assigned in the loop.
        ("other assignment", seed.replace("acc = dot(a, b, acc);", "acc = dot(a, b, acc);\n acc = acc * 0.5;")),
    ];
    for (what, src) in cases {
        let (out, _) = expand_all("", &src);
        assert!(!splits(&out), "{what}: should not split");
        assert!(out.contains("split_bytes : 0u32"), "{what}");
    }
    // After the loop anything goes: it runs once, in the last part.
    let (out, _) = expand_all("", &seed.replace("let c_ptrs", "acc = where_(acc >= 0.0, acc, 0.01 * acc);\n let c_ptrs"));
    assert!(splits(&out));
}

#[test]
fn hopper_cold_paths_run_out_of_line() {
    let (out, _) = expand("", &matmul(3, 64, ""));
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("`{s}` in the expansion"));
    let hopper = &out[at("cfg (target_feature = \"sm_90a\")")..at("cfg (not (target_feature = \"sm_90a\"))")];
    let other = &out[at("cfg (not (target_feature = \"sm_90a\"))")..];
    // The `cp.async` fallback of the tensor-map loop (the last loop) does not join the hot path:
    // it runs the rest of the body (the epilogue) in a never-inlined function and returns.
    let rest = hopper.find(":: outline (move || {").expect("the fallback runs the rest out of line");
    assert!(hopper[rest..].contains("}) ; return ;"), "the fallback returns after the rest");
    // In the out-of-line rest: the epilogue's stores, and no `wgmma` (ptxas would serialize every
    // `wgmma` of the entry).
    let closure = &hopper[rest..rest + hopper[rest..].find("}) ; return ;").unwrap()];
    assert!(closure.contains("store_vec") && !closure.contains("wgmma"));
    assert_eq!(hopper.matches(":: outline (move ||").count(), 1);
    // With a masked epilogue (the seeds' `c_mask`), the checked stores run out of line too, in
    // the rest and in the hot path's epilogue.
    let masked = matmul(3, 64, "")
        .replace("let c_ptrs = c_ptr + offs_m.as_col() * N + offs_n.as_row();", "let offs_cm = program_id(0) * BM + arange(0, BM); let offs_cn = program_id(1) * BN + arange(0, BN); let c_ptrs = c_ptr + offs_cm.as_col() * N + offs_cn.as_row();")
        .replace("store(c_ptrs, c);", "store(c_ptrs, c, (offs_cm.as_col() < M) & (offs_cn.as_row() < N));");
    let (out_m, _) = expand("", &masked);
    let hopper_m = &out_m[..out_m.find("cfg (not (target_feature = \"sm_90a\"))").unwrap()];
    assert!(hopper_m.contains("__sfast"));
    assert_eq!(hopper_m.matches(":: outline (move ||").count(), 3);
    // Bodies without `wgmma` keep everything inline.
    assert!(!other.contains("outline"));
    // Split entries too (ptxas spilled there).
    let (all, _) = expand_all("", &matmul(3, 64, ""));
    let split = &all[all.find("__split (").expect("a split entry")..];
    assert!(!split[..split.find("__KERNEL_META").unwrap_or(split.len())].contains("outline"));
}

/// The instance description each entry exports (`__KERNEL_META_<entry>`) is what `build-ptx`
/// copies into the manifest: it must parse as the manifest's `Instance`.
#[test]
fn instance_descriptions_parse_as_the_manifests_instances() {
    let (_, instances) = expand(
        "",
        r#"#[autotune(configs = [config(BLOCK = 256, num_warps = 8, num_stages = 2)], key = [n])]
        fn add<const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
            let offs = program_id(0) * BLOCK + arange(0, BLOCK);
            store(out + offs, load(x + offs, offs < n), offs < n);
        }"#,
    );
    assert!(!instances.is_empty());
    for (k, vals, warps, stages) in &instances {
        let text = entry_metadata(k, "add__c0", vals, *warps, *stages, 4096);
        let i: kernel_formats::manifest::Instance = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!((i.entry.as_str(), i.kernel.as_str()), ("add__c0", "add"));
        assert_eq!(i.meta.get("BLOCK"), Some(&256));
        assert!(i.functions.is_empty());
        assert_eq!((i.num_warps, i.num_stages, i.threads_per_block, i.dynamic_shared_bytes), (8, 2, 256, 4096));
    }
}
