//! Tests of the device lowering that need no GPU: the analyses that choose a kernel's code
//! shape (layouts, masks along chunks, column steps, tensor maps, split loops, shared memory),
//! and the paths whose code is too large for the snapshots. The code each path generates is
//! checked by the snapshot suite (`kernel-macros/tests/codegen/`, `KERNEL_BLESS=1 cargo test -p
//! kernel-macros snapshots` rewrites it); the GPU test suite checks the numbers it computes.

use super::chunks::Along;
use super::*;
use crate::kernel::LOWERED;

/// The plan of instance `(k, vals, warps, stages)`'s plain entry for `target`.
fn plan_of<'a>(k: &'a Kernel, vals: &'a HashMap<String, i64>, warps: usize, stages: usize, target: Target) -> DevicePlan<'a> {
    plan::plan(k, &plan::Instance { vals, num_warps: warps, num_stages: stages, split: false, maxnreg: None }, target).expect("a valid plan")
}

/// The expansion of `#[kernel(attr)]` on `src` (as [`expand`]) and the `target` plan of its first
/// instance (the kernel and meta values leaked, so that the plan can be returned).
fn first_plan(attr: &str, src: &str, target: Target) -> (String, DevicePlan<'static>) {
    let (out, inst) = expand(attr, src);
    let (k, vals, warps, stages) = inst.into_iter().next().expect("an instance");
    let k: &'static Kernel = Box::leak(Box::new(k));
    let vals: &'static HashMap<String, i64> = Box::leak(Box::new(vals));
    (out, plan_of(k, vals, warps, stages, target))
}

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
fn stages_shrink_to_fit_shared_memory() {
    // 64x512 and 512x64 f16 tiles take 128 KiB per stage: only one fits in 227 KiB.
    let (out, _) = expand("", &matmul(4, 512, ""));
    assert!(out.contains("cp_async_wait_group :: < 0 >"));
    assert_eq!(shared_bytes(&out), 131072 + 16);
}

/// A K loop's chunks of rows aligned only to 2 bytes go through registers: in `wgmma` bodies
/// whose accumulators leave room, every chunk of a thread is read before any is stored
/// (`__halves`), else each chunk is read and stored in turn (`copy_chunk`); 4-byte-aligned
/// chunks keep their `cp.async` pieces either way.
#[test]
fn chunks_of_rows_aligned_to_2_bytes_are_read_ahead_where_registers_allow() {
    let (hopper, other) = ("# [cfg (target_feature = \"sm_90a\")]", "# [cfg (not (target_feature = \"sm_90a\"))]");
    // The sm_90a body (up to the sm_80 one), and the sm_80 body.
    let bodies = |out: &str| -> (String, String) {
        let h = out.find(hopper).expect("an sm_90a body");
        let o = h + out[h..].find(other).expect("an sm_80 body after it");
        (out[h..o].to_string(), out[o..].to_string())
    };
    // 64x64 on 4 warps: 32 accumulator slots and 4 chunks per operand a thread.
    let (small, small80) = bodies(&expand("", &matmul(3, 64, "")).0);
    assert!(small.contains("let mut __half : [[u32 ; 5] ; 4usize]"), "{small}");
    assert!(small.contains(":: load_chunk_halves (__g as * const u8)"));
    assert!(small.contains(":: store_chunk_halves ("));
    assert!(small.contains(":: cp_async_pieces :: < 16 > ("));
    assert!(!small.contains(":: copy_chunk :: <"));
    // `mma.sync` (sm_80) keeps its registers for its fragments: one chunk at a time.
    assert!(small80.contains(":: copy_chunk :: < 16 , 2 > ("), "{small80}");
    assert!(!small80.contains("load_chunk_halves"));
    // 128x128 on 4 warps: 128 slots, no room for 5 registers a chunk beside them.
    let (large, _) = bodies(&expand("", &matmul(3, 64, "").replace("BM = 64, BN = 64", "BM = 128, BN = 128")).0);
    assert!(!large.contains("load_chunk_halves"));
    assert!(large.contains(":: copy_chunk :: < 16 , 2 > ("));
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
/// `f(generator, load, mask)` for each masked load of `src`'s first instance (sm_80 plan).
fn masked_loads<T>(src: &str, f: impl Fn(&mut DevGen, ExprId, ExprId) -> T) -> Vec<T> {
    let (_, inst) = expand("BLOCK = [64]", src);
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let mut g = DevGen::new(&p);
    k.exprs
        .iter()
        .enumerate()
        .filter_map(|(id, e)| match e.kind {
            ExprKind::Load { mask: Some(m), .. } => Some(f(&mut g, id, m)),
            _ => None,
        })
        .collect()
}

fn mask_analysis(src: &str) -> Vec<(Along, bool)> {
    masked_loads(src, |g, id, m| {
        let moves = g.shapes[m].last() == g.shapes[id].last();
        (g.along(m, moves), g.load_chunk_all(id, m, &quote!(__f0), 8).is_some())
    })
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
    (out, entry(k, "mm", vals, (*warps, *stages, None), &[]).expect("a valid plan").tma)
}

/// A K tail whose masked elements lie outside the view (filled with zeros by the copy engine)
/// needs no fix-up when the loads' `other` is zero: the element check tests the in-view part of
/// each row of the last box and the block votes on it (`__mz`); an `other` that is not zero
/// clears the vote instead of testing.
#[test]
fn k_tails_outside_the_view_need_no_fix_up_when_other_is_zero() {
    let (zero, _) = tma_of(&matmul(3, 32, ""));
    assert!(zero.contains("bar_and (__mall || (__mmid && __mz))"), "the fix-up left out on the vote");
    let tested = |out: &str| out.matches("__mz = __mz &&").count();
    let cleared = |out: &str| out.matches("__mz = false").count();
    assert!(tested(&zero) > 0, "the in-view elements of the last box tested");
    // A's `other` 1.0: its rows clear the vote where they would be tested; B's are still tested.
    let ones = matmul(3, 32, "").replace("offs_k.as_row() < K - k * BK, 0.0", "offs_k.as_row() < K - k * BK, 1.0");
    let (one, _) = tma_of(&ones);
    assert!(tested(&one) > 0 && tested(&one) < tested(&zero), "only B's rows tested");
    assert!(cleared(&one) > cleared(&zero), "A's rows clear the vote");
    // `-0.0` is not the copy engine's fill either.
    let neg = matmul(3, 32, "").replace("offs_k.as_row() < K - k * BK, 0.0", "offs_k.as_row() < K - k * BK, -0.0");
    assert_eq!(tested(&tma_of(&neg).0), tested(&one));
}

/// K tiles of 128 (too large for the snapshots; two warpgroups take the same path in
/// `hopper.rs`'s `hopper_reader_barriers`).
#[test]
fn hopper_k_loops_of_deep_tiles_use_reader_barriers() {
    let (out, _) = tma_of(&matmul(3, 128, ""));
    let warps = 4;
    // Two barriers per buffer (3 buffers: a fourth would keep a second block off the SM, see
    // `wgmma_loops_keep_their_extra_buffer_only_where_it_costs_no_resident_block`): copies
    // landed (one arrival, thread 0's), and readers done (one arrival per warp).
    assert_eq!(out.matches(":: mbarrier_init (").count(), 6);
    assert_eq!(out.matches("as u32 , 1u32) ;").count(), 3);
    assert_eq!(out.matches(&format!("as u32 , {warps}u32) ;")).count(), 3);
    // (After the loop, and at the end of the `cp.async` fallback, which does not join it.)
    assert_eq!(out.matches(":: mbarrier_inval (").count(), 2 * 6);
    // No block barrier in the loop: after `wgmma_wait::<1>` each warp's lane 0 arrives on the
    // reader barrier of the buffer whose `wgmma` group it finished, and thread 0 waits for all
    // of them before refilling it with the iteration three ahead (the prologue fills all three).
    let arrive = "if __tid % 32 == 0 { :: kernel_std :: __private :: device :: mbarrier_arrive (__ebars + __nbu * 8) ; }";
    let at = out.find(arrive).expect("arrival");
    let wait1 = out[..at].rfind("wgmma_wait :: < 1 > ()").expect("wgmma_wait::<1> before the arrival");
    assert!(at - wait1 < 200, "the arrival follows the wait");
    assert!(out.contains("let __nx : i64 = __ci - 1 + 3i64 ;"));
    assert!(out.contains(":: mbarrier_wait (__ebars + __nbu * 8 , __ppar) ;"));
    assert!(out.contains("while __pi < 3i64"));
    // A block barrier only after a fix-up (uniform), so every fix-up precedes every `wgmma`.
    let loop_start = out[..at].rfind("while __ci < __n").unwrap();
    assert_eq!(out[loop_start..at].matches("bar_sync ()").count(), 1, "{}", &out[loop_start..at]);
    assert!(out[loop_start..at].contains("if __fix { :: kernel_std :: __private :: device :: bar_sync () ; }"));
}

/// The tensor maps of a K loop's operands (the code that uses them: `hopper.rs` in the snapshots).
#[test]
fn hopper_k_loops_copy_tiles_with_tensor_maps() {
    let (_, tma) = tma_of(&matmul(3, 32, ""));
    // A (64x32): rows K apart (parameter 5), one 64x32 box with the 64-byte swizzle; B (32x64):
    // rows N apart (parameter 4), one 32x64 box with the 128-byte swizzle; column stride 1.
    assert_eq!(
        tma,
        vec![
            TmaDesc { ptr: 0, row_stride: 5, col_stride: None, box_inner: 32, box_rows: 64, swizzle: 64 },
            TmaDesc { ptr: 1, row_stride: 4, col_stride: None, box_inner: 64, box_rows: 32, swizzle: 128 },
        ]
    );

    // B 32x128 goes in two 64-column boxes per stage.
    let wide = matmul(3, 32, "").replace("BN = 64", "BN = 128");
    let (_, tma) = tma_of(&wide);
    assert_eq!(tma[1], TmaDesc { ptr: 1, row_stride: 4, col_stride: None, box_inner: 64, box_rows: 32, swizzle: 128 });

    // Explicit strides: the column stride parameter is listed for the launch to check.
    let strided = matmul(3, 32, "")
        .replace("M: i32, N: i32, K: i32)", "M: i32, N: i32, K: i32, sam: i32, sak: i32)")
        .replace("offs_m.as_col() * K + offs_k.as_row()", "offs_m.as_col() * sam + offs_k.as_row() * sak");
    let (out, tma) = tma_of(&strided);
    assert_eq!(tma[0], TmaDesc { ptr: 0, row_stride: 6, col_stride: Some(7), box_inner: 32, box_rows: 64, swizzle: 64 });
    // ... and, both strides being parameters, a second map for a transposed view of A (row
    // stride 1): rows `sak` apart (the tile's columns), 32x64 boxes staged M-major, which the
    // loop for that staging reads with `wgmma`'s transpose bit for A (B as written: N-major).
    assert_eq!(tma[1], TmaDesc { ptr: 0, row_stride: 7, col_stride: Some(6), box_inner: 64, box_rows: 32, swizzle: 128 });
    assert_eq!(tma.len(), 3);
    assert!(out.contains("if ((__tmask >> 0u32) & 1 == 0 && (__tmask >> 1u32) & 1 != 0)"), "staging picked from the maps' validity");
    assert!(out.contains("wgmma_m64n64k16_f16 :: < 32usize , 0usize , 1u32 , 1u32 >"), "transposed A");
    assert!(out.contains("wgmma_m64n64k16_f16 :: < 32usize , 0usize , 0u32 , 1u32 >"), "A as written");

    // B written for a transposed view (its row stride left out: 1): only the transposed map,
    // rows `N` apart, 64x32 boxes staged K-major and read without `wgmma`'s transpose bit for B.
    let b_transposed = matmul(3, 32, "").replace("offs_k.as_col() * N + offs_n.as_row()", "offs_k.as_col() + offs_n.as_row() * K").replace("b_ptrs += BK * N;", "b_ptrs += BK;");
    let (out, tma) = tma_of(&b_transposed);
    assert_eq!(tma[1], TmaDesc { ptr: 1, row_stride: 5, col_stride: None, box_inner: 32, box_rows: 64, swizzle: 64 });
    assert_eq!(tma.len(), 2);
    assert!(out.contains("wgmma_m64n64k16_f16 :: < 32usize , 0usize , 0u32 , 0u32 >"));
    assert!(!out.contains("(__tmask >> 2u32) & 1 == 0"), "one staging for B");

    // Base pointers advanced by a scalar (a batch entry, `program_id(1)`): the maps cover the
    // parameters' buffers, and the base's distance into the buffer joins the box coordinates
    // and the bounds proof.
    let batched = matmul(3, 32, "")
        .replace("let offs_k = arange(0, BK);", "let offs_k = arange(0, BK); let a_base = a_ptr + program_id(2) * M * K; let b_base = b_ptr + program_id(2) * K * N;")
        .replace("let mut a_ptrs = a_ptr +", "let mut a_ptrs = a_base +")
        .replace("let mut b_ptrs = b_ptr +", "let mut b_ptrs = b_base +");
    let (out, tma) = tma_of(&batched);
    assert_eq!(tma.iter().map(|t| (t.ptr, t.row_stride)).collect::<Vec<_>>(), vec![(0, 5), (1, 4)]);
    assert!(out.contains("let __sc0 : i64 ="), "A's base offset");
    let dist = "(((b_base_4 as usize) . wrapping_sub (__p_b_ptr as usize)) as i64) / (:: core :: mem :: size_of :: < :: kernel_std :: __private :: device :: F16 > () as i64)";
    assert!(out.contains(&format!("(__tO + {dist} + __first")), "B's box coordinates from the buffer's start");

    // Strides that are no parameters (a literal row stride): no maps, no tensor-map loop.
    let literal = matmul(3, 32, "").replace("offs_m.as_col() * K + offs_k.as_row()", "offs_m.as_col() * 64 + offs_k.as_row()");
    let (out, tma) = tma_of(&literal);
    assert!(tma.is_empty() && !out.contains("tma_load_2d") && !out.contains("__tmask"), "{tma:?}");
    // Two warps (no warpgroup): no maps either.
    let (_, tma) = tma_of(&matmul(3, 32, "").replace("num_warps = 4", "num_warps = 2"));
    assert!(tma.is_empty());
}

/// Pointers advanced by one term after another, as Triton's tutorials write them (`a_ptr +
/// rows * s + cols` is `(a_ptr + rows * s) + cols`), are a scalar pointer plus offsets blocks
/// (`ptr_sum`); their sum's row and column terms give the K loop the maps of the parenthesised
/// form, whatever the order of the terms and wherever a scalar (a batch) is added.
#[test]
fn nested_pointer_operands_take_tensor_maps_in_k_loops() {
    let strided = |a: &str, b: &str| {
        matmul(3, 32, "")
            .replace("M: i32, N: i32, K: i32)", "M: i32, N: i32, K: i32, sam: i32, sak: i32)")
            .replace("a_ptr + (offs_m.as_col() * K + offs_k.as_row())", a)
            .replace("b_ptr + (offs_k.as_col() * N + offs_n.as_row())", b)
    };
    let b = "b_ptr + (offs_k.as_col() * N + offs_n.as_row())";
    let (_, want) = tma_of(&strided("a_ptr + (offs_m.as_col() * sam + offs_k.as_row() * sak)", b));
    assert_eq!(want.len(), 3, "{want:?}");
    for (a, b) in [
        ("a_ptr + offs_m.as_col() * sam + offs_k.as_row() * sak", b),
        ("a_ptr + offs_k.as_row() * sak + offs_m.as_col() * sam", "b_ptr + offs_n.as_row() + offs_k.as_col() * N"),
        ("a_ptr + program_id(2) * M * sam + offs_m.as_col() * sam + offs_k.as_row() * sak", "b_ptr + offs_n.as_row() + program_id(2) * K * N + offs_k.as_col() * N"),
    ] {
        let (out, tma) = tma_of(&strided(a, b));
        assert_eq!(tma, want, "{a}; {b}");
        assert!(out.contains("tma_load_2d"), "{a}; {b}");
    }
    // The nested form's checks add the blocks, each evaluated in its own type, in `i64`.
    let (out, _) = tma_of(&strided("a_ptr + offs_m.as_col() * sam + offs_k.as_row() * sak", b));
    assert!(out.contains("let __tO : i64 = (:: kernel_std :: __private :: device :: cast :: < i32 , i64 > ("), "{out}");
    // The plan's view of A's pointer block: the parameter, then the two blocks.
    let plan_for = |src: &str| first_plan("", src, Target::Sm90a).1;
    let p = plan_for(&strided("a_ptr + offs_m.as_col() * sam + offs_k.as_row() * sak", b));
    let k = p.k;
    let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("not pipelined:\n{p}") };
    let sum = p.ptr_sum(pp.ops[0].base).expect("a pointer sum");
    assert!(matches!(k.exprs[sum.base].kind, ExprKind::Param(0)) && sum.offs.len() == 2);
    let (rows, cols) = p.tma_terms(&sum).expect("a row and a column term");
    assert_eq!((rows.stride, rows.of, cols.stride, cols.of), (Some(6), 0, Some(7), 1));

    // No maps (the loop still pipelined) for a block that is neither a row nor a column term,
    // for two column terms, or for offsets that are no 32- or 64-bit integers.
    for a in [
        "a_ptr + offs_m.as_col() * sam + offs_k.as_row() + offs_m.as_col() * offs_k.as_row()",
        "a_ptr + offs_m.as_col() * sam + offs_k.as_row() + offs_k.as_row()",
        "a_ptr + offs_m.as_col() * sam + offs_k.as_row().to::<u32>()",
    ] {
        let (out, tma) = tma_of(&strided(a, b));
        assert!(tma.is_empty() && !out.contains("tma_load_2d"), "{a}: {tma:?}");
        let p = plan_for(&strided(a, b));
        assert!(matches!(only_loop(&p), Schedule::Pipelined(_)), "{a}: still pipelined\n{p}");
    }
}

/// Whether each store's pointer block of the first instance of `src` has a per-column
/// increment (`col_step`), in program order.
fn store_steps(src: &str) -> Vec<bool> {
    let (_, inst) = expand("BLOCK = [64]", src);
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let mut g = DevGen::new(&p);
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

/// Which `dot`s `wgmma` takes (`DevicePlan::wgmma_tiling`); the code of each tiling is in the
/// snapshots (`tensor_cores.rs`, `hopper.rs`).
#[test]
fn wgmma_tilings_need_warpgroups_and_a_swizzle_width() {
    let tiling = |src: &str| {
        let (_, inst) = expand("", src);
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, Target::Sm90a);
        let g = DevGen::new(&p);
        let dot = k.exprs.iter().position(|e| matches!(e.kind, ExprKind::Dot { .. })).expect("a dot");
        g.mma_tiling(dot)
    };
    // 64x64 over one warpgroup: one m64n64 tile.
    assert!(matches!(tiling(&matmul(3, 32, "")), Some(Layout::Mma { wm: 1, wn: 1, tm: 1, tn: 8, wg: true, .. })));
    // 128x192 over two warpgroups: one m64n192 tile each.
    let wide = matmul(3, 64, "").replace("BM = 64, BN = 64", "BM = 128, BN = 192").replace("num_warps = 4", "num_warps = 8");
    assert!(matches!(tiling(&wide), Some(Layout::Mma { tm: 1, tn: 24, wg: true, .. })));
    // 48 columns: B's rows would be 96 bytes, no swizzle width: `mma.sync`.
    assert!(matches!(tiling(&matmul(3, 32, "").replace("BN = 64", "BN = 48")), Some(Layout::Mma { wg: false, .. })));
    // Two warps are no warpgroup.
    assert!(matches!(tiling(&matmul(3, 32, "").replace("num_warps = 4", "num_warps = 2")), Some(Layout::Mma { wg: false, .. })));
}

/// The split analysis (`split.rs`): which loops a launch may split over blocks (the code of
/// split entries: `split.rs` and `hopper.rs` in the snapshots).
#[test]
fn loops_that_cannot_be_split_are_not() {
    let split_bytes = |src: &str| {
        let (_, inst) = expand("", src);
        let (k, vals, warps, stages) = &inst[0];
        entry(k, "mm", vals, (*warps, *stages, None), &[]).expect("a valid plan").split_bytes
    };
    let seed = matmul(3, 32, "");
    // The seed: a 64x64 f32 accumulator per part.
    assert_eq!(split_bytes(&seed), 16384);
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
        assert_eq!(split_bytes(&src), 0, "{what}: should not split");
    }
    // After the loop anything goes: it runs once, in the last part.
    assert_eq!(split_bytes(&seed.replace("let c_ptrs", "acc = where_(acc >= 0.0, acc, 0.01 * acc);\n let c_ptrs")), 16384);
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
        let text = entry::entry_metadata(k, "add__c0", vals, (*warps, *stages, None), 4096);
        let i: kernel_formats::manifest::Instance = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!((i.entry.as_str(), i.kernel.as_str()), ("add__c0", "add"));
        assert_eq!(i.meta.get("BLOCK"), Some(&256));
        assert!(i.functions.is_empty());
        assert_eq!((i.num_warps, i.num_stages, i.threads_per_block, i.dynamic_shared_bytes, i.maxnreg), (8, 2, 256, 4096, None));
        let text = entry::entry_metadata(k, "add__c0", vals, (*warps, *stages, Some(128)), 4096);
        let i: kernel_formats::manifest::Instance = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(i.maxnreg, Some(128), "{text}");
    }
}

/// A config's `maxnreg` (and `#[kernel(maxnreg = ...)]` without autotuning) reaches its entries'
/// instance descriptions, which the device build turns into `.maxnreg` (kernel-build
/// `maxnreg`); configs without it say `null`.
#[test]
fn register_limits_reach_the_instance_descriptions() {
    let body = r#"fn add<const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
            let offs = program_id(0) * BLOCK + arange(0, BLOCK);
            store(out + offs, load(x + offs, offs < n), offs < n);
        }"#;
    let (out, _) = expand("", &format!("#[autotune(configs = [config(BLOCK = 256, num_warps = 8, maxnreg = 96), config(BLOCK = 512)], key = [n])]\n{body}"));
    let meta = |entry: &str| {
        let at = out.find(&format!("__KERNEL_META_{entry} :")).unwrap_or_else(|| panic!("{entry} in {out}"));
        let text = &out[at..];
        text[..text.find("}\"").expect("the description's end") + 1].to_string()
    };
    assert!(meta("add__c0").contains(r#"\"maxnreg\": 96}"#), "{}", meta("add__c0"));
    assert!(meta("add__c1").contains(r#"\"maxnreg\": null}"#), "{}", meta("add__c1"));
    let (out, _) = expand("BLOCK = [64], maxnreg = 64", body);
    assert!(out.contains(r#"\"maxnreg\": 64}"#));
}

/// The per-axis strides of each store's pointer block, and whether its value varies along axis
/// 0 and axis 1, of the first instance of `src`, in program order.
fn store_strides(src: &str) -> Vec<(Option<Vec<super::plan::affine::Stride>>, bool, bool)> {
    let (_, inst) = expand("BLOCK = [64]", src);
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let g = DevGen::new(&p);
    k.body
        .iter()
        .filter_map(|s| match s {
            Stmt::Store { ptr, value, .. } => Some((g.strides(*ptr), g.varies_along(*value, 0), g.varies_along(*value, 1))),
            _ => None,
        })
        .collect()
}

#[test]
fn affine_pointer_blocks_have_strides_per_axis() {
    use super::plan::affine::Stride::{Const, Runtime};
    let got = store_strides(
        r#"fn k<const BLOCK: i32>(y: Ptr<f32>, n: i32) {
            let rows = arange(0, BLOCK);
            let cols = program_id(0) * BLOCK + arange(0, BLOCK);
            let v = zeros::<f32>([BLOCK, BLOCK]);
            store(y + rows.as_col() * n + cols.as_row(), v);
            store(y + cols.as_row() * n + rows.as_col(), (cols.as_row() < n).to::<f32>() + v);
            store(y + rows.as_col() * 4 - cols.as_row() * 2, (rows.as_col() < n).to::<f32>() + v);
            store(y + (cols.as_row() % 7 + rows.as_col()), load(y + rows.as_col() + cols.as_row()));
        }"#,
    );
    assert_eq!(got[0], (Some(vec![Runtime, Const(1)]), false, false));
    // K^T as flash attention loads it: unit stride down the columns.
    assert_eq!(got[1], (Some(vec![Const(1), Runtime]), false, true));
    assert_eq!(got[2], (Some(vec![Const(4), Const(-2)]), true, false));
    assert_eq!(got[3], (None, true, true));
}

/// A flash-attention loop (`qk = dot(q, k^T)`, online softmax, `acc = dot(p, v, acc)`) with
/// `warps` warps, as one kernel.
fn attention(warps: usize) -> String {
    format!(
        r#"#[kernel(BM = [64], BN = [64], D = [64], num_warps = {warps})]
        fn attn<const BM: i32, const BN: i32, const D: i32>(q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, v_ptr: Ptr<f16>, o_ptr: Ptr<f16>, n: i32) {{
            let offs_m = program_id(0) * BM + arange(0, BM);
            let offs_n = arange(0, BN);
            let offs_d = arange(0, D);
            let q = load(q_ptr + offs_m.as_col() * D + offs_d.as_row());
            let mut m_i = full::<f32>([BM], f32::NEG_INFINITY);
            let mut l_i = full::<f32>([BM], 1.0);
            let mut acc = zeros::<f32>([BM, D]);
            for start_n in range(0, n, BN) {{
                let cols = start_n + offs_n;
                let k = load(k_ptr + cols.as_row() * D + offs_d.as_col(), cols.as_row() < n, 0.0);
                let qk = dot(q, k);
                let m_ij = maximum(m_i, qk.max(1));
                let p = exp2(qk - m_ij.as_col());
                let alpha = exp2(m_i - m_ij);
                l_i = l_i * alpha + p.sum(1);
                acc = acc * alpha.as_col();
                let v = load(v_ptr + cols.as_col() * D + offs_d.as_row(), cols.as_col() < n, 0.0);
                acc = dot(p.to::<f16>(), v, acc);
                m_i = m_ij;
            }}
            store(o_ptr + offs_m.as_col() * D + offs_d.as_row(), (acc / l_i.as_col()).to::<f16>());
        }}"#
    )
}

#[test]
fn flash_attention_statistics_stay_in_registers() {
    let src = attention(4);
    let (attr, body) = src.split_once('\n').unwrap();
    let attr = attr.trim().trim_start_matches("#[kernel(").trim_end_matches(")]");
    let (out, inst) = expand(attr, body);
    let (k, vals, warps, stages) = &inst[0];
    for target in [Target::Sm80, Target::Sm90a] {
        let p = plan_of(k, vals, *warps, *stages, target);
        let g = DevGen::new(&p);
        let local = |name: &str| k.locals.iter().position(|l| l.name == name).unwrap();
        // The row statistics take the rows layout of the scores' `mma` layout; `p` (read twice,
        // with an exponential) is computed once, in the scores' layout.
        let qk = g.layouts[local("qk")];
        assert!(matches!(qk, Layout::Mma { wn: 1, .. }), "{target:?}: whole rows per warp: {qk:?}");
        for name in ["m_i", "l_i", "m_ij", "alpha"] {
            assert_eq!(Some(g.layouts[local(name)]), qk.rows(), "{target:?} {name}");
        }
        assert_eq!(g.layouts[local("p")], qk, "{target:?}");
        assert!(matches!(g.kinds[local("p")], LocalKind::Materialized));
    }
    // On sm_90a the second `dot` reads `p` from registers, `q` is copied once before the loop
    // and `k`/`v` two iterations ahead (`num_stages` 3 by default: three buffers each, `cp.async`
    // groups); no reduction goes through shared memory.
    let hopper = out.split("# [cfg (target_feature = \"sm_90a\")]").nth(1).expect("an sm_90a body");
    assert!(hopper.contains("wgmma_m64n64k16_f16_rs"), "A from registers");
    assert!(hopper.contains("cp_async_wait_group :: < 2 >"), "copies two iterations ahead");
    assert!(hopper.contains("checked_mul (__step)"), "the copies two iterations ahead");
}

/// The schedule the plan gives the only loop of `src`'s first instance on `target`.
fn only_loop<'a>(p: &'a DevicePlan<'_>) -> &'a Schedule {
    assert_eq!(p.loops.len(), 1, "one loop");
    p.loops.values().next().unwrap()
}

/// Cold paths (the checked stores) go out of line in plain entries on every target, but for
/// `mma.sync` bodies of targets without `wgmma` whose accumulators take more than
/// `MAX_OUTLINED_ACC_REGS` registers (ptxas spills around the call), and never in split entries.
#[test]
fn cold_paths_out_of_line_by_target_and_accumulator_size() {
    // (cold paths out of line, checked stores rolled) for BM x BN tiles on `warps` warps.
    let flags = |bm: usize, bn: usize, warps: usize, target: Target| {
        let src = matmul(3, 32, "").replace("BM = 64, BN = 64", &format!("BM = {bm}, BN = {bn}")).replace("num_warps = 4", &format!("num_warps = {warps}"));
        let (_, inst) = expand("", &src);
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, target);
        (p.outline_cold, p.roll_cold_stores)
    };
    let outlined = |bm, bn, warps, target| flags(bm, bn, warps, target).0;
    let rolled = |bm, bn, warps, target| flags(bm, bn, warps, target).1;
    // 64x64 on 4 warps: 32 accumulator registers per thread on `mma.sync`.
    assert!(outlined(64, 64, 4, Target::Sm80));
    assert!(outlined(64, 64, 4, Target::Sm90a));
    // 128x256 on 8 warps: 128 registers on `mma.sync` (inline), `wgmma` on sm_90a (out of line).
    assert!(!outlined(128, 256, 8, Target::Sm80));
    assert!(outlined(128, 256, 8, Target::Sm90a));
    // 128x192 on 8 warps: 96 registers, the limit.
    assert!(outlined(128, 192, 8, Target::Sm80));
    // The split entry of the same loop keeps them inline.
    let (_, inst) = expand("", &matmul(3, 32, ""));
    let (k, vals, warps, stages) = &inst[0];
    let split = plan::plan(k, &plan::Instance { vals, num_warps: *warps, num_stages: *stages, split: true, maxnreg: None }, Target::Sm90a).expect("a valid plan");
    assert!(split.split.is_some() && !split.outline_cold, "{split}");
    // Its checked stores still loop over their column pairs, as do those of every body but the
    // `mma.sync` ones over `MAX_OUTLINED_ACC_REGS` accumulator registers.
    assert!(split.roll_cold_stores);
    assert!(rolled(64, 64, 4, Target::Sm80) && rolled(128, 256, 8, Target::Sm90a));
    assert!(!rolled(128, 256, 8, Target::Sm80));
}

#[test]
fn plans_schedule_each_loop() {
    // The seeds' K loop is software-pipelined, with both operands and both pointer steps.
    let (_, inst) = expand("", &matmul(3, 32, ""));
    let (k, vals, warps, stages) = &inst[0];
    for target in [Target::Sm80, Target::Sm90a] {
        let p = plan_of(k, vals, *warps, *stages, target);
        let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("{target:?}: not pipelined:\n{p}") };
        assert_eq!((pp.ops.len(), pp.steps.len(), pp.m, pp.kk), (2, 2, 64, 32));
        assert_eq!(p.layouts[pp.acc], pp.layout);
        assert_eq!(matches!(pp.layout, Layout::Mma { wg: true, .. }), target == Target::Sm90a, "{target:?}");
        assert!(p.split_loop.is_some() && p.split.is_none(), "a plain entry of a splittable loop");
        // Four warps: `wgmma` with tensor maps on sm_90a; the sm_80 body stages as written.
        assert!(pp.ops.iter().all(|o| !o.transposable), "{target:?}");
    }
    // Two warps (`mma.sync` on every architecture): B (whose `% N` columns hide its strides) may
    // be staged transposed, as chosen at run time; A's rows are contiguous (`+ offs_k`).
    let (_, inst) = expand("", &matmul(3, 32, "").replace("num_warps = 4", "num_warps = 2"));
    let (k, vals, warps, stages) = &inst[0];
    for target in [Target::Sm80, Target::Sm90a] {
        let p = plan_of(k, vals, *warps, *stages, target);
        let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("not pipelined:\n{p}") };
        assert!(matches!(pp.layout, Layout::Mma { wg: false, .. }), "{}", pp.layout);
        let transposable: Vec<bool> = pp.ops.iter().map(|o| o.transposable).collect();
        assert_eq!(transposable, [false, true], "{target:?}");
    }
    // A store in the body: the loop runs as written, nothing copied ahead of the store.
    let (_, inst) = expand("", &matmul(3, 32, "store(c_ptr + offs_m, offs_m.to::<f16>());"));
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let Schedule::AsWritten { resident, ahead, .. } = only_loop(&p) else { panic!("pipelined:\n{p}") };
    assert!(resident.is_empty() && ahead.is_empty(), "{p}");
    // Flash attention: `q` stays in shared memory for the whole loop, `k` and `v` are copied one
    // iteration ahead, and the first `dot` is followed by the second.
    let src = attention(4);
    let (attr, body) = src.split_once('\n').unwrap();
    let (_, inst) = expand(attr.trim().trim_start_matches("#[kernel(").trim_end_matches(")]"), body);
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let Schedule::AsWritten { resident, ahead, depth, tma, .. } = only_loop(&p) else { panic!("pipelined:\n{p}") };
    assert!(tma.is_none(), "no tensor maps on sm_80");
    let names = |ops: &[plan::StagedOperand]| ops.iter().map(|o| k.expr_text(o.x)).collect::<Vec<_>>();
    assert_eq!(names(resident), ["%q.3"]);
    assert_eq!(names(ahead), ["%k.9", "%v.14"]);
    assert_eq!((*stages, *depth), (3, 2), "num_stages 3 (the default): two iterations ahead");
    // `num_stages` iterations in flight or ready: the copies run `num_stages - 1` ahead, fewer
    // when their buffers do not fit in shared memory.
    for (num_stages, want) in [(1, 1), (3, 2), (4, 3), (1000, 0)] {
        let p = plan_of(k, vals, *warps, num_stages, Target::Sm90a);
        let Schedule::AsWritten { resident, ahead, depth, tma, .. } = only_loop(&p) else { panic!("pipelined:\n{p}") };
        let bars = tma.is_some();
        let fits = plan::reserved(0, resident, ahead, *depth, bars) <= plan::smem::SMEM_LIMIT;
        if want == 0 {
            assert!(fits && *depth > 1 && *depth < 999 && plan::reserved(0, resident, ahead, *depth + 1, bars) > plan::smem::SMEM_LIMIT, "depth {depth}");
        } else {
            assert_eq!(*depth, want, "num_stages {num_stages}");
            assert!(fits);
        }
    }
    let first_dot = p.dots[0].0;
    assert!(p.followed.contains(&first_dot) && p.followed.len() == 1);
    // The plan's text names each decision.
    let text = p.to_string();
    for want in ["device plan of `attn` for sm_80", "%qk.10: materialized, mma.sync m16n8k16 layout", "staged once before it: %q.3", "copied 2 iterations ahead: %k.9, %v.14"] {
        assert!(text.contains(want), "{want:?} in:\n{text}");
    }
}

/// Flash attention whose key and value rows are `sk` and `sv` elements apart (run-time
/// strides), the key offsets written `key_offsets`.
fn attention_strided(key_offsets: &str) -> String {
    attention(4)
        .replace("o_ptr: Ptr<f16>, n: i32)", "o_ptr: Ptr<f16>, n: i32, sk: i32, sv: i32)")
        .replace("load(k_ptr + cols.as_row() * D + offs_d.as_col(), cols.as_row() < n, 0.0)", &format!("load(k_ptr + ({key_offsets}), cols.as_row() < n, 0.0)"))
        .replace("load(v_ptr + cols.as_col() * D + offs_d.as_row(), cols.as_col() < n, 0.0)", "load(v_ptr + (cols.as_col() * sv + offs_d.as_row()), cols.as_col() < n, 0.0)")
}

/// On sm_90a, the operands a loop copies ahead take tensor maps (one box per operand and
/// iteration, thread 0 issuing them, every thread waiting on the buffer's `mbarrier`) when their
/// offsets are a row and a column term with a run-time stride and move as a whole with the loop
/// variable; the `cp.async` copies remain as the loop's other version.
#[test]
fn copies_ahead_take_tensor_maps_on_sm_90a() {
    let plan_for = |key_offsets: &str, target: Target| {
        let src = attention_strided(key_offsets);
        let (attr, body) = src.split_once('\n').unwrap();
        first_plan(attr.trim().trim_start_matches("#[kernel(").trim_end_matches(")]"), body, target)
    };
    let (out, p) = plan_for("cols.as_row() * sk + offs_d.as_col()", Target::Sm90a);
    let Schedule::AsWritten { ahead, tma: Some(maps), depth, .. } = only_loop(&p) else { panic!("no tensor maps:\n{p}") };
    assert_eq!(ahead.len(), 2);
    // K^T is staged transposed (its map's rows are the keys), V as written; each map's pitch is
    // its row stride.
    let param = |name: &str| p.k.params.iter().position(|q| q.name == name).unwrap();
    let pitches: Vec<(usize, usize)> = maps.maps.iter().map(|t| (t.ptr, t.row_stride)).collect();
    assert_eq!(pitches, [(param("k_ptr"), param("sk")), (param("v_ptr"), param("sv"))]);
    assert!(maps.maps.iter().all(|t| t.col_stride.is_none() && t.box_inner == 64 && t.box_rows == 64));
    assert_eq!((maps.first_map, &p.tensor_maps[..]), (0, &maps.maps[..]));
    assert!(p.to_string().contains("copied 2 iterations ahead: %k.9, %v.14; tensor maps from slot 0"), "{p}");
    // Barriers and box coordinates after the buffers.
    let tiles = plan::reserved(0, &[], ahead, *depth, false);
    assert_eq!(plan::reserved(0, &[], ahead, *depth, true), tiles + 8 * (depth + 1) + 16 * 2);
    for want in ["tma_load_2d", "mbarrier_arrive_expect_tx", "mbarrier_wait", "cp_async_wait_group"] {
        assert!(out.contains(want), "{want} in the expansion");
    }
    // sm_80 has no tensor maps; offsets whose elements move by different amounts with the loop
    // variable (`offs_d * start_n`) take none either.
    let (_, p80) = plan_for("cols.as_row() * sk + offs_d.as_col()", Target::Sm80);
    assert!(matches!(only_loop(&p80), Schedule::AsWritten { tma: None, .. }) && p80.tensor_maps.is_empty());
    let (_, skew) = plan_for("cols.as_row() * sk + offs_d.as_col() * start_n", Target::Sm90a);
    assert!(matches!(only_loop(&skew), Schedule::AsWritten { tma: None, .. }), "{skew}");
    let (_, p) = plan_for("(cols.as_row() + 1) * sk + offs_d.as_col()", Target::Sm90a);
    assert!(matches!(only_loop(&p), Schedule::AsWritten { tma: Some(_), .. }), "a scalar shift times a scalar: {p}");
}

/// A loop whose operands are copied ahead with tensor maps has one block barrier per iteration,
/// after its last `dot` (the buffer it read is copied into next): every thread waits for the
/// copies' `mbarrier` itself, so the `dot`s need no barrier before them, except in an iteration
/// that fixes up masked elements in shared memory (`__fixnow`, uniform over the block).
#[test]
fn copies_ahead_with_tensor_maps_need_one_block_barrier_per_iteration() {
    let src = attention_strided("cols.as_row() * sk + offs_d.as_col()");
    let (attr, body) = src.split_once('\n').unwrap();
    let (out, p) = first_plan(attr.trim().trim_start_matches("#[kernel(").trim_end_matches(")]"), body, Target::Sm90a);
    assert!(matches!(only_loop(&p), Schedule::AsWritten { tma: Some(_), .. }), "{p}");
    // The tensor-map version of the loop: from its first iteration's set-up to the `cp.async`
    // version that follows it.
    let start = out.find("let __fixnow").expect("the tensor-map loop");
    let len = out[start..].find("cp_async_wait_group").expect("the cp.async version after it");
    let body = &out[start..start + len];
    let unguarded = body.match_indices("bar_sync").filter(|(at, _)| {
        // Inside `if __fixnow { .. }`: the guard is the last `if` before it, with no brace closed
        // in between.
        body[..*at].rfind("if __fixnow").is_none_or(|g| body[g..*at].contains('}'))
    });
    assert_eq!(unguarded.count(), 1, "one unconditional barrier, after the second dot");
    assert_eq!(body.matches("if __fixnow").count(), 4, "each operand's fix-up, and a barrier before each dot");
    // The `cp.async` version has a barrier before each dot and one after the last.
    let rest = &out[start + len..];
    let cp_body = &rest[..rest.find("if __ta").expect("after the loop, the barriers' release")];
    assert_eq!(cp_body.matches("bar_sync").count(), 3, "{cp_body}");
}

/// In flash attention's loop, a `where_` whose condition compares indices with a bound
/// (`cols < n`, and `!CAUSAL | rows >= cols`, which holds where `CAUSAL` is false) is tested once
/// per iteration at the block's corners, and the body has a version without it; not a condition
/// that reads what the body computes, nor a diagonal band alone (`rows >= cols`: the iterations
/// that test it are those it cuts), nor in a loop without a tensor-core `dot`.
#[test]
fn where_conditions_that_hold_on_whole_blocks_are_tested_once_per_iteration() {
    let plan_with = |keep: &str, src: String| {
        let src = src.replace("let qk = dot(q, k);", &format!("let qk = dot(q, k);\n let keep = {keep};\n let qk = where_(keep, qk, f32::NEG_INFINITY);"));
        let (attr, body) = src.split_once('\n').unwrap().to_owned();
        let attr = attr.trim().trim_start_matches("#[kernel(").trim_end_matches(")]").replace("D = [64]", "D = [64], CAUSAL = [false, true]");
        let body = body.replace("<const BM: i32, const BN: i32, const D: i32>", "<const BM: i32, const BN: i32, const D: i32, const CAUSAL: bool>");
        let (out, inst) = expand(&attr, &body);
        let plans: Vec<String> = inst.iter().map(|(k, vals, warps, stages)| {
            let p = plan_of(k, vals, *warps, *stages, Target::Sm90a);
            match only_loop(&p) {
                Schedule::AsWritten { uniform, .. } => uniform.iter().map(|c| k.expr_text(*c)).collect::<Vec<_>>().join(", "),
                Schedule::Pipelined(_) => panic!("pipelined:\n{p}"),
            }
        }).collect();
        assert_eq!(plans.len(), 2, "both instances of `{keep}`");
        (out, plans)
    };
    let bound = "(cols.as_row() < n) & (!CAUSAL | (offs_m.as_col() >= cols.as_row()))";
    let (out, plans) = plan_with(bound, attention(4));
    assert!(plans.iter().all(|p| p.starts_with("%keep.")), "{plans:?}");
    // Both versions of the body: the `where_`'s `-inf` only in the one as written, after the
    // test at the corners.
    let test = out.find("if true &&").expect("the per-iteration test");
    let (whole, general) = out[test..].split_once("} else {").unwrap();
    assert!(!whole.contains("NEG_INFINITY") && general.contains("NEG_INFINITY"));
    for (keep, why) in [
        ("qk > 0.0", "reads the body's product"),
        ("offs_m.as_col() >= cols.as_row()", "a diagonal band"),
        ("(cols.as_row() < n) & (qk > 0.0)", "one side reads the product"),
    ] {
        let (_, plans) = plan_with(keep, attention(4));
        assert!(plans.iter().all(String::is_empty), "{keep}: {why}: {plans:?}");
    }
    // Without a tensor-core `dot` in the loop (the product's operands summed by hand).
    let no_dot = attention(4).replace("let qk = dot(q, k);", "let qk = (q.to::<f32>() * 2.0).sum(1).as_col() + cols.as_row().to::<f32>();");
    let (_, plans) = plan_with(bound, no_dot);
    assert!(plans.iter().all(String::is_empty), "{plans:?}");
}

/// Flash attention's key and value pointers written as Triton's tutorial writes them (two
/// offsets blocks over the parameter, terms in either order) take the tensor maps of the
/// parenthesised form; not when the scalar pointer moves with the loop variable (the boxes
/// move with the offsets only), when a block's elements move apart, or when a block is neither
/// a row nor a column term.
#[test]
fn copies_ahead_take_tensor_maps_for_nested_pointers() {
    let plan_for = |key_ptrs: &str, value_ptrs: &str| {
        let src = attention(4)
            .replace("o_ptr: Ptr<f16>, n: i32)", "o_ptr: Ptr<f16>, n: i32, sk: i32, sv: i32)")
            .replace("k_ptr + cols.as_row() * D + offs_d.as_col()", key_ptrs)
            .replace("v_ptr + cols.as_col() * D + offs_d.as_row()", value_ptrs);
        let (attr, body) = src.split_once('\n').unwrap();
        first_plan(attr.trim().trim_start_matches("#[kernel(").trim_end_matches(")]"), body, Target::Sm90a)
    };
    let maps = |p: &DevicePlan<'_>| match only_loop(p) {
        Schedule::AsWritten { tma: Some(m), .. } => Some(m.maps.clone()),
        _ => None,
    };
    let value = "v_ptr + offs_d.as_row() + cols.as_col() * sv";
    let (_, paren) = plan_for("k_ptr + (cols.as_row() * sk + offs_d.as_col())", "v_ptr + (cols.as_col() * sv + offs_d.as_row())");
    let want = maps(&paren).expect("the parenthesised form takes maps");
    for key in ["k_ptr + cols.as_row() * sk + offs_d.as_col()", "k_ptr + offs_d.as_col() + cols.as_row() * sk"] {
        let (out, p) = plan_for(key, value);
        assert_eq!(maps(&p).as_ref(), Some(&want), "{key}:\n{p}");
        assert!(out.contains("tma_load_2d") && out.contains("mbarrier_wait"), "{key}");
    }
    for key in [
        "k_ptr + start_n * sk + offs_n.as_row() * sk + offs_d.as_col()",
        "k_ptr + cols.as_row() * sk + offs_d.as_col() * start_n",
        "k_ptr + cols.as_row() * sk + offs_d.as_col() + cols.as_row() * offs_d.as_col()",
    ] {
        let (_, p) = plan_for(key, value);
        assert!(maps(&p).is_none(), "{key}:\n{p}");
    }
}

#[test]
fn plan_validation_rejects_broken_invariants() {
    let (_, inst) = expand("", &matmul(3, 32, ""));
    let (k, vals, warps, stages) = &inst[0];
    let mut p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    assert!(p.validate().is_ok());
    let acc = k.locals.iter().position(|l| l.name == "acc").unwrap();
    let Layout::Mma { wm, wn, tm, tn, n, wg } = p.layouts[acc] else { panic!("acc is in an mma layout") };
    // An accumulator tiling that covers other rows than the block's.
    p.layouts[acc] = Layout::Mma { wm, wn, tm: tm * 2, tn, n, wg };
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("local `acc`") && e.contains("covers"), "{e}");
    // A pipelined loop whose accumulator lost its `dot`'s layout.
    p.layouts[acc] = Layout::Cyclic;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("pipelined loop over `k`"), "{e}");
}

#[test]
fn hidden_parameters_follow_the_declared_ones_in_one_order() {
    use plan::abi::{hidden_params, Hidden};
    let (_, inst) = expand("", &matmul(3, 32, ""));
    let k = &inst[0].0;
    let lens = [Hidden::Len(0), Hidden::Len(1), Hidden::Len(2)];
    let plain: Vec<Hidden> = lens.into_iter().chain([Hidden::Fault, Hidden::Tag]).collect();
    assert_eq!(hidden_params(k, false, false), plain);
    let maps = [Hidden::TensorMaps, Hidden::TensorMapMask];
    let split = [Hidden::SplitWorkspace, Hidden::SplitCounters, Hidden::SplitWholePrograms, Hidden::SplitParts];
    let all: Vec<Hidden> = plain.iter().copied().chain(maps).chain(split).collect();
    assert_eq!(hidden_params(k, true, true), all);
    // The entry's signature lists them in that order, after the declared parameters.
    let params: Vec<String> = all.iter().map(|h| h.param(k).to_string()).collect();
    assert_eq!(params[..4], ["__len_a_ptr : u64", "__len_b_ptr : u64", "__len_c_ptr : u64", "__fault : * mut u32"]);
    // The expansion: the sm_90a entry takes the tensor maps, and `INFO` lists the same.
    let (out, _) = expand_all("", &matmul(3, 32, ""));
    assert!(out.contains("__fault : * mut u32 , __tag : u32 , __tma : * const u8 , __tmask : u32 ,"), "{out}");
    assert!(out.contains("Hidden :: Tag , :: kernel_runtime :: __private :: Hidden :: TensorMaps"), "INFO lists the maps");
}

#[test]
fn plans_place_pipelined_loops_in_shared_memory() {
    // The seeds' loop on sm_90a: num_stages + 1 buffers from byte 0, and a `Rows` map per operand
    // (rows `K` and `N` elements apart, a parameter each; columns contiguous, no parameter for a
    // `Cols` map).
    let (_, inst) = expand("", &matmul(3, 64, ""));
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm90a);
    let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("not pipelined:\n{p}") };
    assert_eq!((pp.mem.floor, pp.mem.stages, pp.mem.first_map), (0, 4, 0));
    let stagings: Vec<Vec<Staging>> = pp.mem.maps.iter().map(|m| m.iter().map(|(s, _)| *s).collect()).collect();
    assert_eq!(stagings, [[Staging::Rows], [Staging::Rows]]);
    assert_eq!(p.tensor_maps.iter().map(|t| (t.ptr, t.row_stride, t.col_stride)).collect::<Vec<_>>(), [(0, 5, None), (1, 4, None)]);
    // Buffers start higher under loops that keep tiles: fewer fit.
    // (16 KiB a buffer: 2 fit in the top 40 000 bytes, with the proof word and the barriers.)
    let high = p.pipe_mem(pp, plan::smem::SMEM_LIMIT - 40_000, 0, false);
    assert_eq!(high.stages, 2);
    // sm_80: no tensor maps, the instance's 3 buffers.
    let p80 = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let Schedule::Pipelined(pp80) = only_loop(&p80) else { panic!("not pipelined:\n{p80}") };
    assert_eq!((pp80.mem.stages, pp80.mem.maps.len()), (3, 0));
    assert!(p80.tensor_maps.is_empty());
}

#[test]
fn wgmma_loops_keep_their_extra_buffer_only_where_it_costs_no_resident_block() {
    // The buffers of the `wgmma` K loop of 64x64 tiles on 4 warps, by BK and num_stages.
    let buffers = |bk: usize, stages: usize, target: Target| {
        let (_, inst) = expand("", &matmul(stages, bk, ""));
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, target);
        let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("not pipelined:\n{p}") };
        assert_eq!(matches!(pp.layout, Layout::Mma { wg: true, .. }), target == Target::Sm90a, "{p}");
        pp.mem.stages
    };
    // BK = 128: 32 KiB a stage. num_stages + 1 = 4 buffers take 128 KiB, one block per SM;
    // 3 take 96 KiB and two 4-warp blocks fit (registers allow two whatever ptxas gives
    // them): the plan keeps `num_stages` buffers.
    assert_eq!(buffers(128, 3, Target::Sm90a), 3);
    // With 2 stages the third buffer is what lets a `wgmma` group stay in flight: it stays.
    assert_eq!(buffers(128, 2, Target::Sm90a), 3);
    // `mma.sync` loops (sm_80) have `num_stages` buffers in any case.
    assert_eq!(buffers(128, 3, Target::Sm80), 3);
    // BK = 64: 16 KiB a stage; five buffers already let two blocks share an SM.
    assert_eq!(buffers(64, 4, Target::Sm90a), 5);
    // A K loop inside a loop over tiles (a persistent kernel, one program per SM) keeps all four.
    let persistent = matmul(3, 128, "")
        .replace("M: i32, N: i32, K: i32) {", "M: i32, N: i32, K: i32, tiles: i32) {\n for tile in range(program_id(0), tiles, num_programs(0)) {")
        .replace("program_id(0) * BM", "tile * BM")
        .replace("store(c_ptrs, c);", "store(c_ptrs, c); }");
    let (_, inst) = expand("", &persistent);
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm90a);
    let nested: Vec<usize> = p.loops.values().filter_map(|s| if let Schedule::Pipelined(pp) = s { Some(pp.mem.stages) } else { None }).collect();
    assert_eq!(nested, [4], "{p}");
    assert_eq!((plan::smem::blocks_per_sm(128 * 1024, 128), plan::smem::blocks_per_sm(96 * 1024, 128)), (1, 2));
    // Blocks of 8 warps may take every register of an SM, 2-warp blocks a quarter.
    assert_eq!((plan::smem::blocks_per_sm(1024, 256), plan::smem::blocks_per_sm(1024, 64)), (1, 4));
}

#[test]
fn plans_barriers_around_stores() {
    // The seeds' matmul: its store follows the pipelined loop (which ends past a barrier) and
    // ends the kernel: no barrier on either side.
    let (_, inst) = expand("", &matmul(3, 32, ""));
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let b: Vec<_> = p.store_barriers.values().copied().collect();
    assert_eq!(b, [plan::barriers::StoreBarriers { before: false, after: false }]);
    assert!(p.to_string().contains(": no barrier before, no barrier after"), "{p}");
    // Two stores after loads, the first in a loop run as written: barriers around it, and only
    // before the last one (the loop before it touches memory).
    let src = r#"fn k<const B: i32>(x: Ptr<f32>, y: Ptr<f32>, n: i32) {
        let i = arange(0, B);
        for off in range(0, n, B) {
            store(y + off + i, load(x + off + i, off + i < n, 0.0), off + i < n);
        }
        store(y + i, load(x + i, i < n, 0.0) * 2.0, i < n);
    }"#;
    let (_, inst) = expand("B = [64]", src);
    let (k, vals, warps, stages) = &inst[0];
    let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
    let text = p.to_string();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(" before, ")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].ends_with("a barrier before, a barrier after"), "{text}");
    assert!(lines[1].ends_with("a barrier before, no barrier after"), "{text}");
}

/// Every device item of a kernel (each entry, plain and split, and its manifest record) is kept
/// by a device build unless that build names only other kernels (`--cfg kernel_only="…"`), by
/// the name kernel-build passes.
#[test]
fn device_items_are_kept_by_the_kernel_filter() {
    assert_eq!(super::entry::ONLY_CFG, kernel_formats::ONLY_CFG);
    let (out, _) = expand_all("", &matmul(3, 32, ""));
    let filter = "# [cfg (any (not (kernel_only) , kernel_only = \"mm\"))]";
    let items = out.matches("# [no_mangle]").count();
    assert!(items >= 3, "{out}");
    assert_eq!(out.matches(&format!("{filter} # [no_mangle]")).count(), items, "every device item carries the filter");
}

/// For each masked load of `src`'s first instance: whether the analysis finds a test that the
/// mask is false on a whole chunk from its ends.
fn masked_out_analysis(src: &str) -> Vec<bool> {
    masked_loads(src, |g, id, m| g.load_chunk_is(id, m, false, &quote!(__f0), 8).is_some())
}

#[test]
fn chunk_masks_are_tested_masked_out_at_their_ends_when_monotone() {
    let got = masked_out_analysis(
        r#"fn k<const BLOCK: i32>(x: Ptr<f32>, y: Ptr<f32>, n: i32) {
            let rows = arange(0, BLOCK);
            let cols = program_id(0) * BLOCK + arange(0, BLOCK);
            let a = load(x + rows.as_col() * n + cols.as_row(), cols.as_row() < n, 0.0);
            let b = load(x + rows.as_col() * n + cols.as_row(), rows.as_col() < n, 0.0);
            let c = load(x + rows.as_col() * n + cols.as_row(), (rows.as_col() < n) & (cols.as_row() % 3 == 0), 0.0);
            let d = load(x + rows.as_col() * n + cols.as_row(), cols.as_row() % 3 == 0, 0.0);
            store(y + rows.as_col() * n + cols.as_row(), a + b + c + d);
        }"#,
    );
    // a: the first column past the end; b: constant along a row; c: one side of the `&` is
    // enough; d: not monotone.
    assert_eq!(got, vec![true, true, true, false]);
    // "None of `cols < n`" is "the first column is at least `n`", with no wrap along the chunk.
    let src = "fn k<const BLOCK: i32>(x: Ptr<f32>, y: Ptr<f32>, n: i32) { let i = arange(0, BLOCK); store(y + i, load(x + i, i < n, 0.0)); }";
    let tests = masked_loads(src, |g, id, m| [false, true].map(|want| g.load_chunk_is(id, m, want, &quote!(__f0), 8).unwrap().to_string()));
    let [none, all] = &tests[0];
    assert!(none.contains("Num > :: ge (") && !none.contains(":: lt ("), "{none}");
    assert!(all.contains(":: lt (") && all.matches(":: ge (").count() == 1, "{all}");
}

/// The body of the plain entry (first instance, every target) of `src`.
fn device_code(attr: &str, src: &str) -> String {
    let (out, _) = expand(attr, src);
    out
}

#[test]
fn elementwise_phases_of_several_chunks_are_split() {
    let add = "fn add<const BLOCK: i32>(x: Ptr<f16>, y: Ptr<f16>, z: Ptr<f16>, n: i32) {
        let i = program_id(0) * BLOCK + arange(0, BLOCK);
        store(z + i, load(x + i, i < n, 0.0) + load(y + i, i < n, 0.0), i < n);
    }";
    // 4 warps: 1024 elements are 8 per thread (one chunk of 8 f16), 4096 are four chunks.
    let one = device_code("BLOCK = [1024], num_warps = 4", add);
    let four = device_code("BLOCK = [4096], num_warps = 4", add);
    let split = "let __vfast : bool = { let mut __ok : bool = true";
    // One chunk: split too, its accesses tested for the whole block (no loop over chunks).
    assert_eq!(one.matches(split).count(), 1, "one chunk, tests of the whole block: split");
    assert!(one.contains("let __eu : usize") && !one.contains("__ok = __ok &"));
    assert_eq!(four.matches(split).count(), 1, "one phase: the store with its two loads");
    // The fast copy: predicated vector accesses; the checked copy: loops with scalar accesses.
    assert!(four.contains("load_vec_any :: <") && four.contains("store_vec_any :: <"));
    // Every access tested for the whole block: a clean copy for aligned rows whose kept prefix
    // is whole chunks, with accesses without 4-byte pieces (`true`) and no mask per element.
    assert_eq!(four.matches("% 8usize == 0 &&").count(), 3, "the clean tests of the two loads and the store");
    assert_eq!(four.matches(", true) ;").count(), 1, "the clean copy's store");
    assert_eq!(four.matches("] , true) } ;").count(), 2, "the clean copy's two loads");
    // Chunks across the mask's edge are read whole and masked per element.
    assert!(four.contains("[__v] } else {"), "the element code applies the mask");
    assert!(four.contains("inline_call (# [inline (always)] move ||"));
    // The checked copy writes each element as it computes it: only the fast and clean copies
    // gather the chunk in arrays (indexed by its loop's counter, they would live in local memory).
    assert_eq!(four.matches("__sp [__v] =").count(), 2);
    assert!(four.contains("let __a = ") && four.contains("min (__jc * 8usize + __v , 31usize)"));
    // A pointer block read from registers is not tested ahead of the element code.
    let gathered = "fn g<const BLOCK: i32>(x: Ptr<f16>, idx: Ptr<i32>, z: Ptr<f16>) {
        let i = arange(0, BLOCK);
        let j = load(idx + i);
        store(z + i, load(x + j));
    }";
    let g = device_code("BLOCK = [4096], num_warps = 4", gathered);
    assert_eq!(g.matches(split).count(), 1, "only the load of the indices (the store reads a gathered load)");
    // A scattered store in a phase split for its load keeps its checked chunk code: only the
    // store to `w` writes chunks unchecked (in its fast copy; its checked copy writes each
    // element as it computes it).
    let scattered = "fn s<const BLOCK: i32>(x: Ptr<f16>, idx: Ptr<i32>, z: Ptr<f16>, w: Ptr<i32>) {
        let i = arange(0, BLOCK);
        let j = load(idx + i);
        store(z + j, load(x + i));
        store(w + i, j);
    }";
    let s = device_code("BLOCK = [4096], num_warps = 4", scattered);
    assert_eq!(s.matches(split).count(), 3, "the indices' load, the scattered store's phase (for its load), the store to `w`");
    // (The store to `w`'s phase, every access tested for the whole block, has a clean copy too.)
    assert_eq!(s.matches("store_vec_any").count(), 2, "the scattered store is tested chunk by chunk");
    // Pointer blocks stepped by a scalar in a loop (`xs += BLOCK`) are their first value plus a
    // scalar offset: tested ahead like pointers computed from the loop variable.
    let stepped = "fn c<const BLOCK: i32>(x: Ptr<f16>, z: Ptr<f16>, n: i32) {
        let mut xs = x + arange(0, BLOCK);
        let mut zs = z + arange(0, BLOCK);
        for off in range(0, n, BLOCK) {
            let m = off + arange(0, BLOCK) < n;
            store(zs, load(xs, m, 0.0), m);
            xs += BLOCK;
            zs += BLOCK;
        }
    }";
    let c = device_code("BLOCK = [4096], num_warps = 4", stepped);
    assert_eq!(c.matches(split).count(), 1, "the loop's copy");
    assert!(c.contains("load_vec_any :: <") && c.contains("store_vec_any :: <"));
}

#[test]
fn widened_single_use_loads_are_read_at_their_use_in_blocks_of_several_chunks() {
    let src = "fn scale<const BLOCK: i32>(x: Ptr<f16>, w: Ptr<f16>, y: Ptr<f16>) {
        let i = arange(0, BLOCK);
        let a = load(x + i).to::<f32>();
        let b = load(w + i).to::<f32>();
        store(y + i, (a * b).to::<f16>());
    }";
    let kinds = |attr: &str| {
        let (_, inst) = expand(attr, src);
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
        ["a", "b"].map(|n| p.kinds[k.locals.iter().position(|l| l.name == n).unwrap()].clone())
    };
    assert!(kinds("BLOCK = [4096], num_warps = 4").iter().all(|k| matches!(k, LocalKind::Inline(_))));
    assert!(kinds("BLOCK = [1024], num_warps = 4").iter().all(|k| matches!(k, LocalKind::Inline(_))));
    // 128 f16 elements over 128 threads: one element each, no chunks; the values are stored.
    assert!(kinds("BLOCK = [128], num_warps = 4").iter().all(|k| matches!(k, LocalKind::Materialized)));
}

/// A config's `archs` leave its entries (and their manifest records) out of the other
/// architectures' builds; the host's `CONFIGS` list them. A kernel without `wgmma` has one
/// body, kept under the config's architecture's `cfg`.
#[test]
fn configs_name_the_architectures_they_are_built_for() {
    let src = r#"#[autotune(configs = [config(BLOCK = 64, archs = [sm_90a]), config(BLOCK = 128, archs = [sm_80]), config(BLOCK = 256), config(BLOCK = 512, archs = [sm_80, sm_90a])], key = [n])]
        fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
            let offs = arange(0, BLOCK);
            store(x + offs, offs.to::<f32>(), offs < n);
        }"#;
    let (out, _) = expand("", src);
    let hopper = "# [cfg (target_feature = \"sm_90a\")]";
    let other = "# [cfg (not (target_feature = \"sm_90a\"))]";
    // The `cfg` right before an item's `#[no_mangle]`-led attributes, if any.
    let cfg_of = |item: &str| -> Option<&str> {
        let at = out.find(item).unwrap_or_else(|| panic!("{item} in the expansion"));
        let attrs = &out[..at];
        let start = attrs.rfind("# [no_mangle]").expect("the item's attributes");
        let before = attrs[..start].trim_end();
        [hopper, other].into_iter().find(|c| before.ends_with(&format!("{c} # [cfg (any (not (kernel_only) , kernel_only = \"k\"))]")) || before.ends_with(c))
    };
    assert_eq!(cfg_of("fn k__c0 ("), Some(hopper));
    assert_eq!(cfg_of("__KERNEL_META_k__c0 :"), Some(hopper));
    assert_eq!(cfg_of("fn k__c1 ("), Some(other));
    assert_eq!(cfg_of("__KERNEL_META_k__c1 :"), Some(other));
    assert_eq!(cfg_of("fn k__c2 ("), None);
    // Naming every architecture is naming none.
    assert_eq!(cfg_of("fn k__c3 ("), None);
    assert!(out.contains("archs : & [\"sm_90a\"]") && out.contains("archs : & [\"sm_80\"]"), "CONFIGS list the architectures");
}

/// A `dot` operand resident in two loops (Triton's two-stage attention: one `q` for the blocks
/// before the diagonal and for the diagonal ones) is staged from its `load` before each, so its
/// registers do not live across the first loop; with one loop it is staged from registers.
#[test]
fn operands_resident_in_two_loops_are_staged_from_memory() {
    let body = |loops: &str| {
        format!(
            "fn a<const BM: i32, const BN: i32>(q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, o_ptr: Ptr<f32>, n: i32, lo: i32) {{
            let offs_m = program_id(0) * BM + arange(0, BM);
            let offs_d = arange(0, 64);
            let q = load(q_ptr + offs_m.as_col() * 64 + offs_d.as_row());
            let mut l_i = full::<f32>([BM], 0.0);
            {loops}
            store(o_ptr + offs_m, l_i);
        }}"
        )
    };
    let one_loop = "for s in range(0, n, BN) {
                let k = load(k_ptr + (s + arange(0, BN)).as_row() * 64 + offs_d.as_col());
                l_i = l_i + dot(q, k).sum(1);
            }";
    let two_loops = format!("{one_loop} {}", one_loop.replace("range(0, n, BN)", "range(lo, n, BN)"));
    let reloads = |src: String| {
        let (_, inst) = expand("BM = [64], BN = [32], num_warps = 4", &src);
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
        p.reloads.len()
    };
    assert_eq!(reloads(body(one_loop)), 0);
    assert_eq!(reloads(body(&two_loops)), 2, "both loops' uses of `q`");
    // A store between the load and a use: memory may have changed, `q` stays in registers.
    let stored = two_loops.replacen("for s in range(lo", "store(o_ptr + offs_m, l_i); for s in range(lo", 1);
    assert_eq!(reloads(body(&stored)), 0);
}

/// An `if` on meta-parameters keeps only the branch the instance takes, before planning: the
/// instance without it plans no loop for it (and reserves no shared memory for it).
#[test]
fn ifs_on_meta_parameters_keep_the_branch_taken() {
    let src = "fn f<const TWO: bool, const B: i32>(q_ptr: Ptr<f16>, k_ptr: Ptr<f16>, o_ptr: Ptr<f32>, n: i32) {
        let offs = arange(0, 64);
        let q = load(q_ptr + offs.as_col() * 64 + offs.as_row());
        let mut s = full::<f32>([64], 0.0);
        if TWO & (B > 16) {
            for j in range(0, n, 64) {
                s = s + dot(q, load(k_ptr + (j + offs).as_row() * 64 + offs.as_col())).sum(1);
            }
        }
        store(o_ptr + offs, s);
    }";
    let (_, inst) = expand("TWO = [false, true], B = [16, 32], num_warps = 4", src);
    assert_eq!(inst.len(), 4);
    for (k, vals, warps, stages) in &inst {
        let folded = fold::fold_static_ifs(k, vals);
        let p = plan_of(&folded, vals, *warps, *stages, Target::Sm80);
        let taken = vals["TWO"] == 1 && vals["B"] > 16;
        assert_eq!(p.loops.len(), usize::from(taken), "{vals:?}");
        assert!(!folded.body.iter().any(|s| matches!(s, Stmt::If { .. })), "{vals:?}");
        // The unfolded kernel plans the loop in every instance.
        assert_eq!(plan_of(k, vals, *warps, *stages, Target::Sm80).loops.len(), 1);
    }
}

#[test]
fn elementwise_values_used_by_one_statement_are_evaluated_there() {
    let src = "fn norm<const BLOCK: i32>(x: Ptr<f16>, w: Ptr<f16>, y: Ptr<f16>, c: Ptr<i32>, mean: f32) {
        let i = arange(0, BLOCK);
        let e = exp(load(w + i).to::<f32>());
        let g = load(w + i).to::<f32>() * 3.0;
        let old = atomic_add(c + i, 1);
        let a = load(x + i).to::<f32>();
        let b = a * 2.0 - mean;
        store(y + i, (e + e + g + b).to::<f16>());
    }";
    let stored = |attr: &str| {
        let (_, inst) = expand(attr, src);
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
        ["e", "g", "a", "b"].map(|n| matches!(p.kinds[k.locals.iter().position(|l| l.name == n).unwrap()], LocalKind::Materialized))
    };
    // `e` (an `exp`) is read twice, `g` (a load's) after an atomic: both are stored; `a` and
    // `b`, which reads a load, are evaluated in the store.
    assert_eq!(stored("BLOCK = [4096], num_warps = 4"), [true, true, false, false]);
    assert_eq!(stored("BLOCK = [1024], num_warps = 4"), [true, true, false, false]);
    // No chunks (one element per thread): the values read from memory are stored.
    assert_eq!(stored("BLOCK = [128], num_warps = 4"), [true, true, true, false]);
}

/// A value without transcendental functions read twice in the one statement that uses it
/// (layer norm's `x * x`) is computed there, once per element: its `where_` is a select over
/// both sides computed ahead. Read by a reduction in that statement, it is stored (the
/// reduction has a phase of its own); a `where_` over a division keeps its branch.
#[test]
fn values_read_twice_by_one_statement_are_computed_there() {
    let src = "fn var<const BLOCK: i32>(x: Ptr<f16>, out: Ptr<f32>, n: i32, mean: f32) {
        let cols = arange(0, BLOCK);
        let v = load(x + cols, cols < n, 0.0).to::<f32>();
        let d = where_(cols < n, v - mean, 0.0);
        store(out + cols, d * d, cols < n);
    }";
    let reduced = "fn r<const BLOCK: i32>(x: Ptr<f16>, out: Ptr<f32>, n: i32) {
        let cols = arange(0, BLOCK);
        let v = load(x + cols, cols < n, 0.0).to::<f32>();
        store(out + cols, v - v.max(0), cols < n);
    }";
    let kind = |src: &str, n: &str| {
        let (_, inst) = expand("BLOCK = [1024], num_warps = 4", src);
        let (k, vals, warps, stages) = &inst[0];
        let p = plan_of(k, vals, *warps, *stages, Target::Sm80);
        p.kinds[k.locals.iter().position(|l| l.name == n).unwrap()].clone()
    };
    assert!(matches!(kind(src, "d"), LocalKind::Inline(_)), "{:?}", kind(src, "d"));
    assert!(matches!(kind(reduced, "v"), LocalKind::Materialized), "read by `max`: {:?}", kind(reduced, "v"));
    // Its `exp` is in a local evaluated at its use: computed at each read, it would be twice.
    let costly = "fn c<const BLOCK: i32>(x: Ptr<f16>, out: Ptr<f32>) {
        let cols = arange(0, BLOCK);
        let e = exp(load(x + cols).to::<f32>());
        let d = e * 2.0;
        store(out + cols, d * d);
    }";
    assert!(matches!(kind(costly, "e"), LocalKind::Inline(_)), "{:?}", kind(costly, "e"));
    assert!(matches!(kind(costly, "d"), LocalKind::Materialized), "{:?}", kind(costly, "d"));
    let out = device_code("BLOCK = [1024], num_warps = 4", src);
    assert!(out.contains("let __wa ="), "a select over `v - mean` and 0");
    let div = "fn q<const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32, m: f32) {
        let cols = arange(0, BLOCK);
        let v = load(x + cols, cols < n, 0.0);
        store(out + cols, where_(cols < n, v / m, 0.0), cols < n);
    }";
    assert!(!device_code("BLOCK = [1024], num_warps = 4", div).contains("let __wa ="), "a division is not computed ahead");
}

/// A reduction to one value over 8 or more warps reads one warp's partial per lane and
/// combines the lanes with butterflies (one register for the partials, not one per warp).
#[test]
fn reductions_to_one_value_combine_the_warps_partials_across_lanes() {
    let src = "fn total<const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f32>) {
        let i = arange(0, BLOCK);
        store(out, load(x + i).sum(0));
    }";
    let code = device_code("BLOCK = [8192], num_warps = 16", src);
    // 5 butterflies within each warp, then 4 across the lanes holding the 16 warps' partials.
    assert_eq!((code.matches("__lane & (").count(), code.matches("shfl_xor").count()), (1, 9));
    assert!(code.contains("__po . add (__lane & (16usize - 1))"), "each lane reads one partial");
    // 4 warps: the partials are read one after the other.
    let code = device_code("BLOCK = [1024], num_warps = 4", src);
    assert_eq!((code.matches("__lane & (").count(), code.matches("shfl_xor").count()), (0, 5));
}

/// A split phase over a one-dimensional block whose pointer blocks step by one element along it
/// and whose masks keep a prefix (`cols < n`) tests the kept range once, for the whole block;
/// other accesses keep the loop over the thread's chunks.
#[test]
fn prefix_masked_rows_are_tested_once_for_the_whole_block() {
    // The code computing `__vfast` (the split test), and whether it loops over the chunks.
    let test_of = |code: &str| -> String {
        let start = code.find("let __vfast : bool = { let mut __ok : bool = true").expect("a split phase");
        let len = code[start..].find("if __vfast").unwrap();
        code[start..start + len].to_string()
    };
    let loops = |code: &str| test_of(code).contains("while __jc < __nc");
    let rows = "fn rows<const BLOCK: i32>(x: Ptr<f16>, y: Ptr<f16>, stride: i32, n: i32) {
        let row = program_id(0);
        let cols = arange(0, BLOCK);
        let mask = cols < n;
        let v = load(x + row * stride + cols, mask, 0.0).to::<f32>();
        store(y + row * stride + cols, (v * 2.0).to::<f16>(), mask);
    }";
    let code = device_code("BLOCK = [4096], num_warps = 4", rows);
    assert!(!loops(&code), "no loop over the chunks");
    // The load and the store: the kept prefix rounded up to chunks, each tested at its ends.
    assert_eq!(test_of(&code).matches("let __eu : usize").count(), 2);
    // A mask that is not a prefix (`cols > n`) is tested chunk by chunk.
    let suffix = rows.replace("cols < n", "cols > n");
    let code = device_code("BLOCK = [4096], num_warps = 4", &suffix);
    assert!(loops(&code) && !test_of(&code).contains("let __eu : usize"));
    // Two-dimensional blocks are tested chunk by chunk.
    let tile = "fn tile<const BLOCK: i32>(x: Ptr<f16>, y: Ptr<f16>, stride: i32) {
        let r = arange(0, 8);
        let c = arange(0, BLOCK);
        let p = r.as_col() * stride + c.as_row();
        store(y + p, load(x + p));
    }";
    let code = device_code("BLOCK = [256], num_warps = 4", tile);
    assert!(loops(&code) && !test_of(&code).contains("let __eu : usize"));
}

/// An access outside its buffer is recorded where it is checked, inline (the record's
/// compare-and-swap and stores, no call: a call site kept every live value in registers).
#[test]
fn faults_are_recorded_where_checked_without_calls() {
    let src = "fn g<const BLOCK: i32>(x: Ptr<f32>, idx: Ptr<i32>, z: Ptr<f32>, n: i32) {
        let i = arange(0, BLOCK);
        if n < 0 { return; }
        let j = load(idx + i);
        store(z + i, load(x + j, j < n, 0.0));
    }";
    let out = device_code("BLOCK = [256], num_warps = 4", src);
    assert!(out.contains("in_bounds (") && out.contains("__fault , __tag"), "element checks record into the launch's record");
    assert!(!out.contains("report_fault"), "no out-of-line reporter is called");
}

/// The analysis of multiples (`multiples.rs`): what literals, meta-parameters, loops and
/// `multiple_of` hints say of each local, and the checks of hints it proves, which the device
/// code leaves out (a hint it cannot prove keeps its check).
#[test]
fn multiples_follow_hints_loops_and_arithmetic() {
    let src = "fn k<const B: i32>(x: Ptr<f16>, out: Ptr<f32>, n: i32, stride: i32) {
        let xh = multiple_of(x, 16);
        let sh = multiple_of(stride, 8);
        let row = program_id(0);
        let at = xh + row * sh;
        let plain = x + row * stride;
        let twice = (row * 4 + 8) << 2;
        let mut acc = zeros::<f32>([B]);
        for start in range(0, n, B) {
            let s1 = multiple_of(start, B);
            let s2 = multiple_of(start, 2 * B);
            let cols = s1 + s2 + arange(0, B);
            acc += load(at + cols, cols < n, 0.0).to::<f32>();
        }
        store(out + twice, acc.sum(0));
    }";
    let (_, inst) = expand("B = [64], num_warps = 4", src);
    let (k, vals, ..) = &inst[0];
    let m = multiples::Multiples::of(k, vals);
    let of = |name: &str| {
        let l = k.locals.iter().rposition(|x| x.name == name).unwrap_or_else(|| panic!("no local {name}"));
        m.local(l)
    };
    // Pointers in bytes: the hinted pointer plus an f16 row offset that is a multiple of 8
    // elements is 16-byte aligned; without hints nothing is known.
    assert_eq!((of("xh"), of("sh"), of("at"), of("plain"), of("row")), (16, 8, 16, 1, 1));
    // (4 row + 8) << 2: a multiple of 16; the loop variable starts at 0 and steps by B.
    assert_eq!((of("twice"), of("start"), of("s1"), of("s2"), of("cols")), (16, 64, 64, 128, 64));
    // Checks: the two scalar hints and `s2` (2 B is not proven) stay; `s1` is proven.
    let checks = |k: &Kernel| {
        fn walk(stmts: &[Stmt], out: &mut Vec<String>, k: &Kernel) {
            for s in stmts {
                if let Stmt::Assert { hint: Some((l, _)), .. } = s {
                    out.push(k.locals[*l].name.clone());
                }
                s.bodies().into_iter().for_each(|b| walk(b, out, k));
            }
        }
        let mut out = Vec::new();
        walk(&k.body, &mut out, k);
        out.len()
    };
    let mut pruned = k.clone();
    multiples::drop_proven_hints(&mut pruned, vals);
    assert_eq!((checks(k), checks(&pruned)), (4, 3));
}

/// An immutable scalar `let` naming another immutable local is removed before planning and its
/// reads read that local (a mutable source, or a block, keeps its `let`).
#[test]
fn scalar_aliases_read_their_source() {
    let src = "fn k<const B: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
        let mut acc = zeros::<f32>([B]);
        let mut m = n;
        for start in range(0, n, B) {
            let s = start;
            let t = s;
            let u = m;
            m = m + 1;
            acc += load(x + t + u + arange(0, B));
        }
        store(out + arange(0, B), acc);
    }";
    let (_, inst) = expand("B = [64]", src);
    let (k, ..) = &inst[0];
    let mut out = k.clone();
    alias::inline_scalar_aliases(&mut out);
    let named = |k: &Kernel, name: &str| {
        let l = k.locals.iter().position(|x| x.name == name).unwrap();
        let lets = count_lets(&k.body, l);
        let reads = k.exprs.iter().filter(|e| matches!(e.kind, ExprKind::Local(r) if r == l)).count();
        (lets, reads)
    };
    fn count_lets(stmts: &[Stmt], l: LocalId) -> usize {
        stmts.iter().map(|s| usize::from(matches!(s, Stmt::Let { local, .. } if *local == l)) + s.bodies().into_iter().map(|b| count_lets(b, l)).sum::<usize>()).sum()
    }
    assert_eq!((named(k, "s"), named(k, "t")), ((1, 1), (1, 1)));
    // `s` and `t` are gone and `start` is read where they were; `u` names a mutable local.
    assert_eq!((named(&out, "s"), named(&out, "t"), named(&out, "u")), ((0, 0), (0, 0), (1, 1)));
}

/// Whole-block tests stated once per loop (`whole_loop.rs`): a loop over the blocks of a row
/// (`cols = off + arange(0, B)`, stepping by `B`) tests each access once, before the loop, on
/// the union of its blocks; a loop that steps by another amount, or an access whose pointer
/// reads a value the loop defines, keeps the per-iteration test.
#[test]
fn row_loops_test_their_accesses_once() {
    let kernel = |step: &str, extra: &str| {
        format!(
            "fn k<const B: i32>(x: Ptr<f16>, y: Ptr<f16>, n: i32, stride: i32) {{
                let row = program_id(0);
                let x_row = x + row * stride;
                let mut acc = zeros::<f32>([B]);
                for off in range(0, n, {step}) {{
                    let cols = off + arange(0, B);
                    {extra}
                    acc += load(x_row + cols, cols < n, 0.0).to::<f32>();
                }}
                let s = acc.sum(0);
                for off in range(0, n, B) {{
                    let cols = off + arange(0, B);
                    let v = load(x_row + cols, cols < n, 0.0).to::<f32>();
                    store(y + row * stride + cols, (v - s).to::<f16>(), cols < n);
                }}
            }}"
        )
    };
    let loop_tests = |src: &str| expand("B = [2048], num_warps = 8", src).0.matches("let __span").count();
    // Both loops: one test per access, before the loop; the second loop's `x` reads the
    // first's flags (two in all).
    let both = kernel("B", "");
    assert_eq!(loop_tests(&both), 2);
    // A loop stepping by 2 B: its blocks are not the union's; the second loop keeps its two.
    assert_eq!(loop_tests(&kernel("2 * B", "")), 2);
    // A pointer that reads a value the loop defines.
    let moved = kernel("B", "let x_row = x_row + off;");
    assert_eq!(loop_tests(&moved), 2);
    // The second loop inside an `if` after the first still reads its flags.
    let nested = both.replace("let s = acc.sum(0);", "let s = acc.sum(0); if n > 7 {").replace("(v - s).to::<f16>(), cols < n);\n                }", "(v - s).to::<f16>(), cols < n);\n                }}");
    assert_eq!(loop_tests(&nested), 2, "{nested}");
    // Not where the first loop may not have run (inside an `if` of its own), where a value the
    // test reads was given another since (`x_row` reassigned), or over other bounds.
    let first_in_if = both.replacen("for off in range(0, n, B) {", "if n > 7 { for off in range(0, n, B) {", 1).replace("let s = acc.sum(0);", "} let s = acc.sum(0);");
    assert_eq!(loop_tests(&first_in_if), 3, "{first_in_if}");
    let reassigned = both.replace("let x_row = x + row * stride;", "let mut x_row = x + row * stride;").replace("let s = acc.sum(0);", "let s = acc.sum(0); x_row = x_row + 0;");
    assert_eq!(loop_tests(&reassigned), 3);
    let bounds = both.replace("for off in range(0, n, B) {\n                    let cols = off + arange(0, B);\n                    let v", "for off in range(0, n - 1, B) {\n                    let cols = off + arange(0, B);\n                    let v");
    assert_ne!(bounds, both);
    assert_eq!(loop_tests(&bounds), 3);
    // The flags are declared before the loop, in the statement sequence both loops are part of.
    let out = expand("B = [2048], num_warps = 8", &both).0;
    let first = out.find("let (__lt").expect("flags before the first loop");
    assert!(out[first..].find("while").is_some_and(|w| out[first..first + w].matches("let __span").count() == 1));
}

/// The rows and columns of a pipelined accumulator that only masked stores read (`live.rs`):
/// A's rows live where the store's row factor holds, B's columns where its column factor does;
/// none where a use mixes lines, reads the accumulator outside a store, or where the factor
/// cannot be computed before the loop.
#[test]
fn only_the_stored_lines_of_an_accumulator_are_live() {
    let masked = "let cm = program_id(0) * BM + arange(0, BM);
            let cn = program_id(1) * BN + arange(0, BN);
            let c_mask = (cm.as_col() < M) & (cn.as_row() < N);
            store(c_ptrs, c, c_mask);";
    let live_of = |src: &str| {
        let (_, p) = first_plan("", src, Target::Sm90a);
        let k = p.k;
        let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("not pipelined:\n{p}") };
        let text = |l: Option<plan::LiveLines>| l.map(|l| (l.axis, k.expr_text(l.pred)));
        (text(pp.ops[0].live), text(pp.ops[1].live))
    };
    let live = |epilogue: &str| live_of(&matmul(3, 32, "").replace("store(c_ptrs, c);", epilogue));
    let (a, b) = live(masked);
    assert_eq!(a, Some((0, "(%cm.11.expand_dims(1) < M)".to_string())));
    assert_eq!(b, Some((1, "(%cn.12.expand_dims(0) < N)".to_string())));
    // Scalars bound before the loop (the tutorial's `pid_m`) may be read by the factor.
    let src = matmul(3, 32, "").replace("let offs_m = (program_id(0) * BM", "let pm = program_id(0); let offs_m = (pm * BM");
    let (a, _) = live_of(&src.replace("store(c_ptrs, c);", "let cm = pm * BM + arange(0, BM); store(c_ptrs, c, cm.as_col() < M);"));
    assert!(a.is_some_and(|(_, t)| t.contains("%cm.")), "a scalar bound before the loop");
    // Elementwise epilogues keep the lines apart; a row factor alone leaves every column live.
    let (a, b) = live(&masked.replace("store(c_ptrs, c, c_mask)", "store(c_ptrs, maximum(c * c, c), c_mask)"));
    assert!(a.is_some() && b.is_some());
    let (a, b) = live("let cm = program_id(0) * BM + arange(0, BM); store(c_ptrs, c, cm.as_col() < M);");
    assert!(a.is_some() && b.is_none(), "{a:?} {b:?}");
    // Another `dot` reading the accumulator as B keeps its columns apart, not its rows.
    let (a, b) = live(&masked.replace("store(c_ptrs, c, c_mask)", "store(c_ptrs, dot(zeros::<f16>([BM, BM]), c).to::<f16>(), c_mask)"));
    assert!(a.is_none() && b.is_some(), "{a:?} {b:?}");
    for (why, epilogue) in [
        ("no mask", "store(c_ptrs, c);".to_string()),
        ("a column sum mixes the rows", format!("{masked} store(c_ptr + arange(0, BN), acc.sum(0).to::<f16>());")),
        ("the accumulator transposed twice", masked.replace("store(c_ptrs, c, c_mask)", "store(c_ptrs, c.trans().trans(), c_mask)")),
        ("a mask read from memory", "let cm = load(c_ptr + arange(0, BM)).to::<i32>(); store(c_ptrs, c, cm.as_col() < M);".to_string()),
        ("a mask of a scalar bound after the loop", "let cm = program_id(0) * BM + arange(0, BM); let lim = M - 1; store(c_ptrs, c, cm.as_col() <= lim);".to_string()),
    ] {
        let (a, b) = live(&epilogue);
        assert!(a.is_none() && b.is_none(), "{why}: {a:?} {b:?}");
    }
}

/// A K loop whose body recomputes its operands' pointers from the loop variable (Triton's
/// persistent matmul: `offs_k = k0 + arange(0, BK)`, `a_ptr + ... + offs_k[None, :] * s`) gets
/// pointers stepped once per iteration, set before the loop to those of its first iteration,
/// and is pipelined. Loops with two `dot`s, or whose pointers do not move as a whole with the
/// variable (a gather), keep their code; so do loops the pipeliner would still not take (an
/// 8-bit integer `dot`), which keep their copies ahead.
#[test]
fn pointers_recomputed_from_the_loop_variable_are_stepped() {
    let kernel = |elem: &str, acc: &str, extra: &str, offs_a: &str| {
        format!(
            r#"
            #[autotune(configs = [config(BM = 64, BN = 64, BK = 32, num_warps = 4, num_stages = 3)], key = [M])]
            fn mm<const BM: i32, const BN: i32, const BK: i32>(a_ptr: Ptr<{elem}>, b_ptr: Ptr<{elem}>, c_ptr: Ptr<{acc}>, M: i32, N: i32, K: i32, sak: i32) {{
                let offs_m = program_id(0) * BM + arange(0, BM);
                let offs_n = program_id(1) * BN + arange(0, BN);
                let rk = arange(0, BK);
                let mut acc = zeros::<{acc}>([BM, BN]);
                let mut acc2 = zeros::<{acc}>([BM, BN]);
                for k0 in range(16, K, BK) {{
                    let offs_k = k0 + rk;
                    let a = load(a_ptr + offs_m.as_col() * K + {offs_a}.as_row() * sak, offs_k.as_row() < K, 0);
                    let b = load(b_ptr + (offs_k.as_col() * N + offs_n.as_row()), offs_k.as_col() < K, 0);
                    acc = dot(a, b, acc);
                    {extra}
                }}
                store(c_ptr + offs_m.as_col() * N + offs_n.as_row(), acc + acc2);
            }}"#
        )
    };
    let instance = |src: &str| {
        let (_, inst) = expand("", src);
        let (k, vals, warps, stages) = inst.into_iter().next().expect("an instance");
        let (k, vals): (&'static Kernel, &'static HashMap<String, i64>) = (Box::leak(Box::new(k)), Box::leak(Box::new(vals)));
        (k, vals, warps, stages)
    };
    let (k, vals, warps, stages) = instance(&kernel("f16", "f32", "", "offs_k"));
    assert!(matches!(only_loop(&plan_of(k, vals, warps, stages, Target::Sm80)), Schedule::AsWritten { .. }));
    let (s, loops) = stepped::step_operand_pointers(k, None);
    assert_eq!(loops.len(), 1);
    let s: &'static Kernel = Box::leak(Box::new(s));
    let p = plan_of(s, vals, warps, stages, Target::Sm80);
    let Schedule::Pipelined(pp) = only_loop(&p) else { panic!("not pipelined:\n{p}") };
    let steps: Vec<String> = pp.steps.iter().map(|(_, st, _)| s.expr_text(*st)).collect();
    assert_eq!(steps, ["((1 * sak) * BK)", "((1 * N) * BK)"]);
    let firsts: Vec<String> = s.body.iter().filter_map(|st| match st {
        Stmt::Let { local, value } if s.locals[*local].mutable && s.locals[*local].name.ends_with("stepped") => Some(s.expr_text(*value)),
        _ => None,
    }).collect();
    assert_eq!(firsts.len(), 2);
    assert!(firsts.iter().all(|f| f.contains("(16 + %rk.2)")), "the first iteration's pointers: {firsts:?}");
    for (why, src) in [
        ("two dots", kernel("f16", "f32", "acc2 = dot(a, b, acc2);", "offs_k")),
        ("a gather", kernel("f16", "f32", "", "(offs_k * offs_k)")),
    ] {
        let (k, ..) = instance(&src);
        assert!(stepped::step_operand_pointers(k, None).1.is_empty(), "{why}");
    }
    // An i8 `dot` is not pipelined: its loop keeps the pointers as written, copied ahead.
    let (k, vals, warps, stages) = instance(&kernel("i8", "i32", "", "offs_k"));
    assert_eq!(stepped::step_operand_pointers(k, None).1.len(), 1, "the rewrite applies");
    let kept: &'static Kernel = Box::leak(Box::new(entry::step_pointers(k.clone(), &plan::Instance { vals, num_warps: warps, num_stages: stages, split: false, maxnreg: None })));
    let p = plan_of(kept, vals, warps, stages, Target::Sm80);
    assert!(matches!(only_loop(&p), Schedule::AsWritten { ahead, .. } if ahead.len() == 2), "{p}");
}

/// The live lines of a pipelined loop inside a loop over tiles (a persistent matmul): the store
/// mask's factors read scalars bound in the outer loop's body before the K loop and the outer
/// loop's variable, fixed for the whole K loop; a scalar bound after the K loop is not.
#[test]
fn live_lines_of_a_k_loop_inside_a_loop_over_tiles() {
    // The tutorial's matmul inside a loop over tiles, its store's masks read `store_pm`.
    let src = |store_pm: &str| {
        matmul(3, 32, "")
            .replace("K: i32) {", "K: i32, programs: i32) { let tiles_n = cdiv(N, BN); for tile in range(program_id(0), cdiv(M, BM) * tiles_n, programs) { let pm = tile / tiles_n; let pn = tile % tiles_n;")
            .replace("program_id(0) * BM", "pm * BM")
            .replace("program_id(1) * BN", "pn * BN")
            .replace(
                "store(c_ptrs, c);",
                &format!("let pm2 = tile / tiles_n; let cm = {store_pm} * BM + arange(0, BM); let cn = pn * BN + arange(0, BN); store(c_ptrs, c, (cm.as_col() < M) & (cn.as_row() < N)); }}"),
            )
    };
    let live = |src: &str| {
        let (_, p) = first_plan("", src, Target::Sm90a);
        let pipelined = p.loops.values().find_map(|s| match s {
            Schedule::Pipelined(pp) => Some((pp.ops[0].live, pp.ops[1].live)),
            _ => None,
        });
        let (a, b) = pipelined.unwrap_or_else(|| panic!("no pipelined loop:\n{p}"));
        (a.map(|l| p.k.expr_text(l.pred)), b.map(|l| p.k.expr_text(l.pred)))
    };
    let (a, b) = live(&src("pm"));
    assert!(a.is_some_and(|t| t.contains("%cm.")) && b.is_some_and(|t| t.contains("%cn.")));
    let (a, b) = live(&src("pm2"));
    assert!(a.is_none() && b.is_some(), "a scalar bound after the K loop");
}

/// The tensor-map in-row check of a tile whose columns are clamped at the tensor's edge
/// (`where_(offs_n < N, offs_n, 0)`, Triton's persistent matmul) tests the columns where the
/// condition holds at both ends of the row instead of failing every tile.
#[test]
fn columns_clamped_with_where_step_by_one_in_the_tensor_map_check() {
    let src = matmul(3, 32, "")
        .replace("let offs_n = (program_id(1) * BN + arange(0, BN)) % N;", "let rn = program_id(1) * BN + arange(0, BN); let offs_n = where_(rn < N, rn, 0);")
;
    let (out, p) = first_plan("", &src, Target::Sm90a);
    assert!(matches!(only_loop(&p), Schedule::Pipelined(pp) if !pp.mem.maps.is_empty()), "tensor maps:\n{p}");
    assert!(!out.contains("__ok = false ;"), "no in-row check that always fails");
}


/// `acc += dot(a, b)` is combined into `acc = dot(a, b, acc)` before planning, so its K loop is
/// pipelined like the one written with the accumulator argument; a sum with another value, or
/// of another type, is left as written.
#[test]
fn plus_equals_dot_is_pipelined_like_dot_with_an_accumulator() {
    let plan = |src: &str| {
        let (_, inst) = expand("", src);
        let (mut k, vals, warps, stages) = inst.into_iter().next().expect("an instance");
        accumulate::fuse_accumulation(&mut k);
        let (k, vals): (&'static Kernel, &'static HashMap<String, i64>) = (Box::leak(Box::new(k)), Box::leak(Box::new(vals)));
        plan_of(k, vals, warps, stages, Target::Sm90a)
    };
    for form in ["acc += dot(a, b);", "acc = dot(a, b) + acc;", "acc = acc + dot(a, b);"] {
        let p = plan(&matmul(3, 32, "").replace("acc = dot(a, b, acc);", form));
        assert!(matches!(only_loop(&p), Schedule::Pipelined(_)), "{form}:\n{p}");
    }
    let p = plan(&matmul(3, 32, "").replace("acc = dot(a, b, acc);", "acc = dot(a, b) + zeros::<f32>([BM, BN]);"));
    assert!(!matches!(only_loop(&p), Schedule::Pipelined(_)), "not an accumulation:\n{p}");
}

/// The `target` plan of the first instance of `src` after the K-loop rewrites `entry` applies
/// (`entry::step_pointers`: kept where the loop is then pipelined).
fn stepped_plan(src: &str, target: Target) -> DevicePlan<'static> {
    let (_, inst) = expand("", src);
    let (k, vals, warps, stages) = inst.into_iter().next().expect("an instance");
    let vals: &'static HashMap<String, i64> = Box::leak(Box::new(vals));
    let inst = plan::Instance { vals, num_warps: warps, num_stages: stages, split: false, maxnreg: None };
    let k: &'static Kernel = Box::leak(Box::new(entry::step_pointers(k, &inst)));
    plan_of(k, vals, warps, stages, target)
}

/// A K loop whose masks read a scalar computed in the body (`k_remaining = K - k * BK`, as
/// Triton's split-K matmul writes it) is pipelined once the scalar is inlined into its reads
/// (`stepped.rs`); a scalar read from memory keeps the loop as written.
#[test]
fn scalars_computed_in_a_k_loop_are_inlined_into_its_masks() {
    let schedule = |src: &str| {
        let p = stepped_plan(src, Target::Sm90a);
        (matches!(only_loop(&p), Schedule::Pipelined(_)), p.to_string())
    };
    let with = |stmt: &str| matmul(3, 32, "").replace("let a = load(a_ptrs, offs_k.as_row() < K - k * BK, 0.0);", &format!("{stmt} let a = load(a_ptrs, offs_k.as_row() < k_remaining, 0.0);")).replace("let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);", "let b = load(b_ptrs, offs_k.as_col() < k_remaining, 0.0);");
    let (pipelined, p) = schedule(&with("let k_remaining = K - k * BK;"));
    assert!(pipelined, "{p}");
    let (pipelined, p) = schedule(&with("let k_remaining = load(a_ptr + k).to::<i32>();"));
    assert!(!pipelined, "{p}");
}

/// `dot(a, b.trans())` of a `b` loaded `[BN, BK]` (a weight stored `[N, K]`) with pointers
/// recomputed from the loop variable: the transpose is pushed into the load's pointers and mask
/// (`stepped.rs`), so the loop is pipelined with B staged from memory contiguous down its
/// columns; pointers advanced in place (a mutable local) get a transposed copy advanced by the
/// same steps.
#[test]
fn a_transposed_operand_is_loaded_through_transposed_pointers() {
    let src = |b_load: &str| {
        matmul(3, 32, "")
            .replace("let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());", "let mut bt_ptrs = b_ptr + (offs_n.as_col() * K + offs_k.as_row());")
            .replace("let b = load(b_ptrs, offs_k.as_col() < K - k * BK, 0.0);", b_load)
            .replace("b_ptrs += BK * N;", "")
            .replace("acc = dot(a, b, acc);", "acc = dot(a, b.trans(), acc);")
    };
    for target in [Target::Sm80, Target::Sm90a] {
        let schedule = |src: &str| {
            let p = stepped_plan(src, target);
            let pipelined = match only_loop(&p) {
                Schedule::Pipelined(pp) => Some(p.k.expr_text(pp.ops[1].load)),
                _ => None,
            };
            (pipelined, p.to_string())
        };
        for recomputed in [
            "let rk = k * BK + arange(0, BK); let b = load(b_ptr + offs_n.as_col() * K + rk.as_row(), rk.as_row() < K, 0.0);",
            "let rk = k * BK + arange(0, BK); let w_ptrs = b_ptr + offs_n.as_col() * K + rk.as_row(); let b = load(w_ptrs, rk.as_row() < K, 0.0);",
        ] {
            let (b, p) = schedule(&src(recomputed));
            assert!(b.as_ref().is_some_and(|t| t.contains("expand_dims(1)") && !t.contains("trans(")), "{target:?}: {b:?}\n{p}");
        }
        // Pointers advanced in place: a transposed copy of them, advanced by the same steps.
        let in_place = "let b = load(bt_ptrs, offs_k.as_row() < K - k * BK, 0.0);";
        // A 2-D fill is transposed with the pointers.
        let fill = "let rk = k * BK + arange(0, BK); let b = load(b_ptr + offs_n.as_col() * K + rk.as_row(), rk.as_row() < K, zeros::<f16>([BN, BK]) + offs_n.as_col().to::<f16>());";
        let (b, p) = schedule(&src(fill));
        assert!(b.as_ref().is_some_and(|t| t.contains("full[BK, BN]") && !t.contains("trans(")), "{target:?}: {b:?}\n{p}");
        let (b, p) = schedule(&src(in_place).replace("a_ptrs += BK;", "a_ptrs += BK; bt_ptrs += BK;"));
        assert!(b.as_ref().is_some_and(|t| t.contains("%bt_ptrs_t.") && !t.contains("trans(")), "{target:?}: {b:?}\n{p}");
        // Pointers given another value in the loop are left alone.
        let (b, p) = schedule(&src(in_place).replace("a_ptrs += BK;", "a_ptrs += BK; bt_ptrs = bt_ptrs + offs_k.as_row();"));
        assert!(b.is_none(), "{target:?}: {p}");
    }
}

/// A K loop that advances its pointers before loading (`a_ptrs += BK; let a = load(a_ptrs)`,
/// the pointers starting one tile back) or twice in an iteration is run as written: the
/// pipelined copies of iteration `i` read the pointers' first value plus `i` steps.
#[test]
fn pointers_advanced_before_the_loads_or_twice_are_not_pipelined() {
    let base = matmul(3, 32, "");
    let before = base.replace("a_ptrs += BK;", "").replace("b_ptrs += BK * N;", "").replace("for k in 0..cdiv(K, BK) {", "for k in 0..cdiv(K, BK) { a_ptrs += BK; b_ptrs += BK * N;");
    let twice = base.replace("a_ptrs += BK;", "a_ptrs += 16; a_ptrs += BK - 16;");
    for (why, src) in [("advanced before the loads", before), ("advanced twice", twice)] {
        let (_, p) = first_plan("", &src, Target::Sm80);
        assert!(!matches!(only_loop(&p), Schedule::Pipelined(_)), "{why}:\n{p}");
    }
    let (_, p) = first_plan("", &base, Target::Sm80);
    assert!(matches!(only_loop(&p), Schedule::Pipelined(_)), "as the seeds write it:\n{p}");
}

/// A 128x256 tile on 8 warps with an epilogue of transcendental functions: the accumulator
/// keeps its 128 registers per thread (`wgmma`), and the epilogue's phase runs as a loop over
/// groups of 4 slots on copies of its arrays (`rolled.rs`), also one that reads a row statistic;
/// a phase of 64 slots per thread, or inside the K loop, stays unrolled; transcendental functions in the loop that weigh
/// more than 2 halve the accumulator's registers.
#[test]
fn transcendental_epilogues_run_as_loops_over_slots() {
    let src = |in_loop: &str, epilogue: &str| {
        format!(
            r#"fn mm<const BM: i32, const BN: i32>(a: Ptr<f16>, b: Ptr<f16>, c: Ptr<f32>, k: i32) {{
                let m = arange(0, BM);
                let n = arange(0, BN);
                let kk = arange(0, 64);
                let mut acc = zeros::<f32>([BM, BN]);
                for i in 0..k / 64 {{
                    acc = dot(load(a + m.as_col() * k + (i * 64 + kk).as_row()), load(b + (i * 64 + kk).as_col() * BN + n.as_row()), acc);
                    {in_loop}
                }}
                {epilogue}
                store(c + m.as_col() * BN + n.as_row(), acc);
            }}"#
        )
    };
    let attr = "BM = [128], BN = [256], num_warps = 8";
    let rolled = |out: &str| out.matches("let __ng : usize").count();
    let tile = |p: &DevicePlan<'_>| p.to_string().lines().find(|l| l.contains("%acc.") && l.contains("materialized")).unwrap_or_default().to_string();

    let (out, p) = first_plan(attr, &src("", "acc = 0.5 * acc * (1.0 + tanh(acc * 0.8));"), Target::Sm90a);
    assert!(tile(&p).contains("tiles of 64x256"), "{}", tile(&p));
    assert!(rolled(&out) >= 1, "the epilogue as a loop (each body and version)");
    assert!(out.contains("__g * 4usize + __u"), "groups of 4 slots");
    assert!(out.contains("SmemSlots :: < f32 >"), "the accumulator looped over in the K loop's shared memory");
    // The result takes the place of a copied value read only at its own slot (a helper's
    // argument): one copy of 128 KiB (in each body).
    let (out, _) = first_plan(attr, &src("", "let x = acc;\n acc = 0.5 * x * (1.0 + tanh(x * 0.8)) + x;"), Target::Sm90a);
    let views: Vec<&str> = out.split("SmemSlots :: < f32 > :: new (").skip(1).map(|v| v.split(',').next().unwrap_or_default()).collect();
    assert!(views.len() >= 2 && views.len() % 2 == 0 && views.iter().all(|v| *v == views[0]) && out.contains("let x_"), "{views:?}");
    // With two stages the K loop's buffers (96 KiB) are smaller than the accumulator (128 KiB):
    // the copy is in local memory.
    let (out, _) = first_plan(&format!("{attr}, num_stages = 2"), &src("", "acc = tanh(acc);"), Target::Sm90a);
    assert!(rolled(&out) >= 1 && !out.contains("SmemSlots"), "{out}");
    let (out, p) = first_plan(attr, &src("", "acc = 0.5 * acc * (1.0 + erf(acc * 0.7)) + exp(acc) / (1.0 + exp(acc));"), Target::Sm90a);
    assert!(tile(&p).contains("tiles of 64x256"), "long functions outside loops keep the budget: {}", tile(&p));
    assert!(rolled(&out) >= 1);

    // A row statistic (another layout) read too: its array is copied for the loop as well.
    let (out, _) = first_plan(attr, &src("", "let mx = acc.max(1);\n acc = exp(acc - mx.as_col());"), Target::Sm90a);
    assert!(rolled(&out) >= 1);
    assert!(out.contains("let mx_"), "{out}");
    // 64 slots per thread (128x128 on 8 warps): unrolled.
    let (out, _) = first_plan("BM = [128], BN = [128], num_warps = 8", &src("", "acc = tanh(acc);"), Target::Sm90a);
    assert_eq!(rolled(&out), 0, "64 slots: unrolled");
    let (out, p) = first_plan(attr, &src("acc = tanh(acc);", ""), Target::Sm90a);
    assert_eq!(rolled(&out), 0, "inside the loop: unrolled");
    assert!(tile(&p).contains("tiles of 64x256"), "{}", tile(&p));
    let (_, p) = first_plan(attr, &src("acc = acc + exp(acc) / (1.0 + exp(acc));", ""), Target::Sm90a);
    assert!(!tile(&p).contains("tiles of 64x256"), "weight 4 in the loop: half the registers: {}", tile(&p));
}

/// A loop that copies its `dot` operands 3 iterations ahead (4 stages of 32 KiB) and adds the
/// product under a mask, which takes an exchange of the 64 KiB result through shared memory in
/// its body: 4 stages need more than a block may have (262 208 bytes), so the entry is planned
/// with fewer (a generated kernel of the differential test failed at launch before).
#[test]
fn bodies_too_large_for_shared_memory_are_planned_with_fewer_stages() {
    let src = r#"fn k<const BM: i32, const BN: i32, const BK: i32>(a: Ptr<bf16>, b: Ptr<bf16>, o: Ptr<bf16>, M: i32, N: i32, K: i32, sam: i32, sak: i32, sbk: i32, sbn: i32) {
        let rm = program_id(0) * BM + arange(0, BM);
        let rn = program_id(1) * BN + arange(0, BN);
        let rk = arange(0, BK);
        let mut acc = zeros::<f32>([BM, BN]);
        for k0 in (0..K).step_by(BK) {
            let ka = k0 + rk;
            let x = load(a + rm.as_col() * sam + ka.as_row() * sak, (rm.as_col() < M) & (ka.as_row() < K), 0.0);
            let y = load(b + ka.as_col() * sbk + rn.as_row() * sbn, (ka.as_col() < K) & (rn.as_row() < N), 0.0);
            acc = acc + where_(rm.as_col() + rn.as_row() >= k0, dot(x, y), 0.0);
        }
        store(o + rm.as_col() * N + rn.as_row(), acc.to::<bf16>(), (rm.as_col() < M) & (rn.as_row() < N));
    }"#;
    let (out, _) = expand("BM = [128], BN = [128], BK = [64], num_stages = 4", src);
    let bytes: Vec<usize> = out.split("shared_bytes :").skip(1).map(|v| v.trim_start().split("u32").next().unwrap_or_default().parse().expect("a number")).collect();
    assert!(!bytes.is_empty() && bytes.iter().all(|b| *b <= plan::smem::SMEM_LIMIT), "{bytes:?}");
    assert!(bytes.iter().any(|b| *b > 160 * 1024), "still copying ahead: {bytes:?}");
}
