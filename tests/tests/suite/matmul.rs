//! The seeds' matmul on the CPU backend against a float64 reference on random data.

use examples::matmul::{kernels, leaky_relu, matmul, matmul_into, swish, MatmulError};
use kernel_runtime::testing::with_forced_split;
use kernel_runtime::{f16, Func, Tensor};
use tests::*;

/// Tolerance of the seeds' unit test (f16 output, f32 accumulation).
const ATOL: f64 = 1e-2;
const RTOL: f64 = 1e-2;

fn check(m: usize, n: usize, k: usize, act: Option<Func>, act_ref: fn(f64) -> f64, seed: u64) {
    let dev = tests::test_device();
    let (a, av) = randn_f16(&dev, m, k, seed);
    let (b, bv) = randn_f16(&dev, k, n, seed + 1);
    // Poisoned output: an element the kernel forgets to write stays NaN and fails the check.
    let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
    matmul_into(&a, &b, &c, act).expect("matmul");
    let got = c.to_f64_vec();
    let want = matmul_ref(&av, &bv, m, n, k, act_ref);
    // f16 rounding of the output: |err| <= 2^-11 |x| plus accumulated f32 error.
    let r = worst_ratio(&got, &want, ATOL, RTOL);
    assert!(r <= 1.0, "{m}x{n}x{k}: worst error ratio {r}");
}

#[test]
fn square_512_matches_reference() {
    check(512, 512, 512, None, identity, 1);
}

#[test]
fn non_multiple_sizes_300x500x200() {
    check(300, 500, 200, None, identity, 2);
}

#[test]
fn k_needs_masking() {
    // K = 77 is not a multiple of any BLOCK_SIZE_K: the K edge is masked inside the loop.
    check(64, 96, 77, None, identity, 3);
}

#[test]
fn tiny_and_degenerate_shapes() {
    check(1, 1, 1, None, identity, 4);
    check(3, 257, 5, None, identity, 5);
}

#[test]
fn fused_leaky_relu() {
    check(130, 70, 96, Some(leaky_relu), leaky_relu_ref, 6);
}

fn leaky_relu_ref(x: f64) -> f64 {
    tests::leaky_relu(x)
}

#[test]
fn fused_swish() {
    check(100, 64, 48, Some(swish), tests::swish, 7);
}

/// `c = a @ b` with config `cfg` of the matmul kernel, any strides, no activation.
fn launch_config(cfg: usize, a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) {
    launch_config_act(cfg, a, b, c, None);
}

/// `c = act(a @ b)` with config `cfg` of the matmul kernel, any strides.
fn launch_config_act(cfg: usize, a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>, act: Option<Func>) {
    let (mi, ki, ni) = (a.shape()[0] as i32, a.shape()[1] as i32, b.shape()[1] as i32);
    kernels::matmul_kernel::launch_config(
        cfg,
        |meta: &kernels::matmul_kernel::Meta| (kernel_runtime::cdiv(mi, meta.BLOCK_SIZE_M) * kernel_runtime::cdiv(ni, meta.BLOCK_SIZE_N),),
        a, b, c, mi, ni, ki,
        a.stride(0) as i32, a.stride(1) as i32, b.stride(0) as i32, b.stride(1) as i32, c.stride(0) as i32, c.stride(1) as i32,
        act,
    )
    .unwrap();
}

/// Every config, without and with each fused activation (swish: transcendental functions on the
/// accumulator in the tensor cores' layout, as a loop over slots where a thread holds more than
/// 64; split launches again in `every_launch_again_with_forced_splits`); K = 150 gives every
/// config several K iterations and a tail.
#[test]
fn every_autotune_config_is_correct() {
    let dev = tests::test_device();
    let (m, n, k) = (70, 90, 150);
    let (a, av) = randn_f16(&dev, m, k, 8);
    let (b, bv) = randn_f16(&dev, k, n, 9);
    let acts: [(Option<Func>, fn(f64) -> f64, &str); 3] = [(None, identity, "none"), (Some(leaky_relu), leaky_relu_ref, "leaky_relu"), (Some(swish), tests::swish, "swish")];
    for (act, act_ref, name) in acts {
        let want = matmul_ref(&av, &bv, m, n, k, act_ref);
        for cfg in 0..kernels::matmul_kernel::CONFIGS.len() {
            let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
            launch_config_act(cfg, &a, &b, &c, act);
            let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
            assert!(r <= 1.0, "{name}, config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
        }
    }
}

/// Every config on operands whose rows start at odd element offsets: no 16-byte copy and no
/// paired store may be taken, so the K loop's chunks of rows aligned only to 2 bytes go through
/// registers (read ahead of their stores where the accumulators leave room, else one chunk at
/// a time), its masked chunks and the epilogue element by element (on the GPU), across several
/// K iterations. Then the same shapes aligned.
#[test]
fn every_autotune_config_on_misaligned_and_aligned_views() {
    let dev = tests::test_device();
    let (m, n, k) = (70, 90, 150);
    for misaligned in [true, false] {
        let pad = misaligned as usize;
        let view = |t: Tensor<f16>, cols: usize| if misaligned { t.narrow(1, 1, cols).unwrap() } else { t };
        let (a_full, a_fullv) = randn_f16(&dev, m, k + pad, 12);
        let (b_full, b_fullv) = randn_f16(&dev, k, n + pad, 13);
        let (a, b) = (view(a_full, k), view(b_full, n));
        let av: Vec<f64> = (0..m).flat_map(|i| (0..k).map(move |j| (i, j))).map(|(i, j)| a_fullv[i * (k + pad) + j + pad]).collect();
        let bv: Vec<f64> = (0..k).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| b_fullv[i * (n + pad) + j + pad]).collect();
        let want = matmul_ref(&av, &bv, m, n, k, identity);
        for cfg in 0..kernels::matmul_kernel::CONFIGS.len() {
            let c_full = Tensor::<f16>::full(&dev, &[m, n + pad], f16::NAN).unwrap();
            let c = view(c_full.clone(), n);
            launch_config(cfg, &a, &b, &c);
            let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
            assert!(r <= 1.0, "misaligned {misaligned}, config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
            if misaligned {
                // The padding column in front of each row is never written.
                let full = c_full.to_f64_vec();
                assert!((0..m).all(|i| full[i * (n + 1)].is_nan()), "config {cfg} wrote outside the view");
            }
        }
    }
}

/// Every config on operands whose rows are 8- or 4-byte aligned but not 16 (K = 148 and
/// N = 90 give row pitches of 296 and 180 bytes; wider pitches and views starting 2 or 4
/// elements in give the other combinations): the K loop copies their chunks with `cp.async` in
/// 8- or 4-byte pieces (on the GPU) beside 16-byte copies where a row happens to be aligned.
/// The columns outside the views are never written.
#[test]
fn every_autotune_config_on_rows_aligned_to_8_and_4_bytes() {
    let dev = tests::test_device();
    let (m, n, k) = (70, 90, 148);
    // (extra columns of each full tensor, first column of the views)
    for (extra, first) in [(0, 0), (4, 4), (2, 2)] {
        let view = |t: &Tensor<f16>, cols: usize| t.narrow(1, first, cols).unwrap();
        let (a_full, a_fullv) = randn_f16(&dev, m, k + extra, 40 + extra as u64);
        let (b_full, b_fullv) = randn_f16(&dev, k, n + extra, 50 + extra as u64);
        let (a, b) = (view(&a_full, k), view(&b_full, n));
        let av: Vec<f64> = (0..m * k).map(|f| a_fullv[f / k * (k + extra) + first + f % k]).collect();
        let bv: Vec<f64> = (0..k * n).map(|f| b_fullv[f / n * (n + extra) + first + f % n]).collect();
        let want = matmul_ref(&av, &bv, m, n, k, identity);
        for cfg in 0..kernels::matmul_kernel::CONFIGS.len() {
            let c_full = Tensor::<f16>::full(&dev, &[m, n + extra], f16::NAN).unwrap();
            let c = view(&c_full, n);
            launch_config(cfg, &a, &b, &c);
            let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
            assert!(r <= 1.0, "pitches +{extra}, views from column {first}, config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
            let full = c_full.to_f64_vec();
            let mut outside = (0..m * (n + extra)).filter(|f| !(first..first + n).contains(&(f % (n + extra))));
            assert!(outside.all(|f| full[f].is_nan()), "config {cfg} wrote outside the view");
        }
    }
}

/// Every config on shapes whose operands can be copied with Hopper's tensor maps (16-byte
/// aligned rows and addresses): whole blocks only (192x256x256); edge blocks whose rows wrap
/// around (`% M`, `% N`) next to blocks that do not (200x136x128: the entry checks per block
/// which copy it may use); and a K tail whose masked columns and rows lie inside the operands'
/// buffers (views of wider and taller tensors: the copy brings real values there, which the
/// kernel must replace by the load's `other`, 0); and K tails at the end of the operands (no
/// block size divides K = 200 or 1000: the last box reaches past A's columns and B's rows, where
/// the copy engine fills zeros, and only the last iteration is fixed up). On GPUs without tensor
/// maps, and on the CPU, the same launches take the other paths.
#[test]
fn every_autotune_config_on_tensor_map_shapes() {
    let dev = tests::test_device();
    let shapes = [(192, 256, 256, 256, 256, 20), (200, 136, 128, 128, 128, 22), (130, 64, 72, 128, 128, 24), (256, 256, 200, 200, 200, 26), (128, 192, 1000, 1000, 1000, 28)];
    for (m, n, k, a_cols, b_rows, seed) in shapes {
        let (a_full, a_fullv) = randn_f16(&dev, m, a_cols, seed);
        let (b_full, b_fullv) = randn_f16(&dev, b_rows, n, seed + 1);
        let (a, b) = (a_full.narrow(1, 0, k).unwrap(), b_full.narrow(0, 0, k).unwrap());
        let av: Vec<f64> = (0..m).flat_map(|i| (0..k).map(move |j| (i, j))).map(|(i, j)| a_fullv[i * a_cols + j]).collect();
        let want = matmul_ref(&av, &b_fullv[..k * n], m, n, k, identity);
        for cfg in 0..kernels::matmul_kernel::CONFIGS.len() {
            let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
            launch_config(cfg, &a, &b, &c);
            let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
            assert!(r <= 1.0, "{m}x{n}x{k}, config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
        }
    }
}

/// A `(rows, cols)` operand whose rows past `rows` (`lines_are_rows`) or columns past `cols`
/// are NaN in its storage: the top rows (left columns) of a `(rows + extra, cols)` (`(rows, cols
/// + extra)`) tensor, or, `transposed`, the transpose of a view of the transposed storage with
/// NaN past its edge; with the operand's values and the plain tensor.
fn operand_next_to_nan(dev: &kernel_runtime::Device, (rows, cols): (usize, usize), lines_are_rows: bool, transposed: bool, extra: usize, seed: u64) -> (Tensor<f16>, Tensor<f16>, Vec<f64>) {
    let (t, v) = randn_f16(dev, rows, cols, seed);
    // The storage, as (storage rows, storage columns), and the value at each of its elements.
    let (sr, sc) = match (transposed, lines_are_rows) {
        (false, true) => (rows + extra, cols),
        (false, false) => (rows, cols + extra),
        (true, true) => (cols, rows + extra),
        (true, false) => (cols + extra, rows),
    };
    let at = |i: usize, j: usize| if transposed { (j < rows && i < cols).then(|| v[j * cols + i]) } else { (i < rows && j < cols).then(|| v[i * cols + j]) };
    let data = (0..sr * sc).map(|f| at(f / sc, f % sc).map_or(f16::NAN, f16::from_f64)).collect();
    let storage = Tensor::from_vec(dev, &[sr, sc], data).unwrap();
    let view = if transposed { storage.narrow(0, 0, cols).unwrap().narrow(1, 0, rows).unwrap().t() } else { storage.narrow(0, 0, rows).unwrap().narrow(1, 0, cols).unwrap() };
    let plain = if transposed { Tensor::from_vec(dev, &[cols, rows], (0..rows * cols).map(|f| f16::from_f64(v[(f % rows) * cols + f / rows])).collect()).unwrap().t() } else { t };
    (view, plain, v)
}

/// Every config, in the four layouts, on edge blocks whose rows and columns wrap around (`% M`,
/// `% N`) with NaN just past the operands: A's storage has NaN rows past its `m` rows, B's NaN
/// columns past its `n` columns (as written or transposed). The rows and columns that wrap are
/// never stored, so on sm_90a the tensor maps copy what lies past the edge instead (the NaN
/// inside the storage, zeros past its end), which must not reach a stored element; the CPU
/// backend and `cp.async` read the wrapped rows. Also with nothing past the operands (plain
/// tensors), and with a K tail.
#[test]
fn every_autotune_config_on_wrapped_edges_next_to_nan() {
    let dev = tests::test_device();
    for (m, n, k, extra, seed) in [(200, 136, 128, 64, 90), (130, 264, 200, 8, 92)] {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let (a_view, a, av) = operand_next_to_nan(&dev, (m, k), true, ta, extra, seed);
            let (b_view, b, bv) = operand_next_to_nan(&dev, (k, n), false, tb, extra, seed + 1);
            let want = matmul_ref(&av, &bv, m, n, k, identity);
            for cfg in 0..kernels::matmul_kernel::CONFIGS.len() {
                for (what, a, b) in [("next to NaN", &a_view, &b_view), ("plain", &a, &b)] {
                    let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
                    launch_config(cfg, a, b, &c);
                    let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
                    assert!(r <= 1.0, "{m}x{n}x{k} {what} (A transposed {ta}, B transposed {tb}), config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
                }
            }
        }
    }
}

/// Launches whose last wave is split over several blocks per program (`kernel_runtime::split_plan`):
/// on a 132-SM H100, 2304² in 128x256 tiles is 162 programs, 132 run whole and the last 30 in 4
/// parts each (64x256 tiles: 324 programs, split as the blocks per SM allow; 128x192 tiles: 216
/// programs, 84 in the last wave of 132, not split); K = 1000 ends in a tail that only the last
/// part of each split program sees. The CPU backend never
/// splits: there the same check runs on a smaller size.
#[test]
fn split_last_waves_match_the_reference() {
    let dev = tests::test_device();
    let (m, n, k) = if dev.is_cuda() { (2304, 2304, 1000) } else { (130, 260, 100) };
    let (a, av) = randn_f16(&dev, m, k, 40);
    let (b, bv) = randn_f16(&dev, k, n, 41);
    let want = matmul_ref(&av, &bv, m, n, k, identity);
    for cfg in [0, 1, 11] {
        let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
        launch_config(cfg, &a, &b, &c);
        let first = c.to_f64_vec();
        let r = worst_ratio(&first, &want, ATOL, RTOL);
        assert!(r <= 1.0, "{m}x{n}x{k}, config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
        // The parts add up in a fixed order: a second launch gives the same bits (and finds its
        // counters reset by the first).
        let c2 = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
        launch_config(cfg, &a, &b, &c2);
        assert!(c2.to_f64_vec().iter().zip(&first).all(|(x, y)| x.to_bits() == y.to_bits()), "config {cfg}: a second launch differs");
    }
}

/// The wide split plan (`kernel_runtime::wide_plan`, which autotuning may choose): a grid of
/// less than one wave with every program split (1024² × 1000 in 128x256 tiles: 32 programs on 4
/// blocks each on an H100), and a last wave more than half full (2304² in 128x192 tiles: 216
/// programs, the last 84 on 3 blocks each), with a K tail, against the float64 reference.
#[test]
fn wide_split_plans_match_the_reference() {
    let dev = tests::test_device();
    let shapes: &[(usize, usize, usize, usize)] =
        if dev.is_cuda() { &[(1024, 1024, 1000, 0), (2304, 2304, 1000, 11), (512, 512, 512, 13)] } else { &[(130, 260, 100, 0)] };
    for &(m, n, k, cfg) in shapes {
        let (a, av) = randn_f16(&dev, m, k, 50);
        let (b, bv) = randn_f16(&dev, k, n, 51);
        let want = matmul_ref(&av, &bv, m, n, k, identity);
        let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
        kernel_runtime::with_split(kernel_runtime::SplitChoice::Wide, || launch_config(cfg, &a, &b, &c));
        let first = c.to_f64_vec();
        let r = worst_ratio(&first, &want, ATOL, RTOL);
        assert!(r <= 1.0, "{m}x{n}x{k}, config {cfg} ({}), wide split: worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
        let c2 = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
        kernel_runtime::with_split(kernel_runtime::SplitChoice::Wide, || launch_config(cfg, &a, &b, &c2));
        assert!(c2.to_f64_vec().iter().zip(&first).all(|(x, y)| x.to_bits() == y.to_bits()), "config {cfg}: a second launch differs");
    }
}

/// A `(rows, cols)` operand, as written or as the transposed view of a `(cols + pad, rows + pad)`
/// tensor narrowed to `(cols, rows)` (how `nn.Linear` stores its weight); with its values.
fn operand_view(dev: &kernel_runtime::Device, rows: usize, cols: usize, transposed: bool, pad: usize, seed: u64) -> (Tensor<f16>, Vec<f64>) {
    if !transposed {
        return randn_f16(dev, rows, cols, seed);
    }
    let (s, sv) = randn_f16(dev, cols + pad, rows + pad, seed);
    let t = s.narrow(0, 0, cols).unwrap().narrow(1, 0, rows).unwrap().t();
    assert_eq!(t.strides(), &[1, rows + pad]);
    let v = (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| sv[j * (rows + pad) + i]).collect();
    (t, v)
}

/// Every config on A and B each as written or transposed (the four layouts of a matmul), on
/// shapes whose transposed operands have 16-byte aligned pitches (on sm_90a the tensor maps
/// then copy them into a transposed staging): whole blocks, edge blocks, K tails whose masked
/// elements lie inside the storage (`pad`: the copy brings real values that must become 0) or
/// past its end (zeros from the copy engine); and a pitch that is not aligned (other paths).
#[test]
fn every_autotune_config_on_transposed_layouts() {
    let dev = tests::test_device();
    let shapes = [(192, 256, 256, 0, 60), (200, 136, 128, 8, 62), (256, 192, 200, 0, 64), (128, 64, 1000, 8, 66), (72, 80, 48, 3, 68)];
    for (m, n, k, pad, seed) in shapes {
        for (ta, tb) in [(false, true), (true, false), (true, true)] {
            let (a, av) = operand_view(&dev, m, k, ta, pad, seed);
            let (b, bv) = operand_view(&dev, k, n, tb, pad, seed + 1);
            let want = matmul_ref(&av, &bv, m, n, k, identity);
            for cfg in 0..kernels::matmul_kernel::CONFIGS.len() {
                let c = Tensor::<f16>::full(&dev, &[m, n], f16::NAN).unwrap();
                launch_config(cfg, &a, &b, &c);
                let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
                assert!(r <= 1.0, "{m}x{n}x{k} (A transposed {ta}, B transposed {tb}, pad {pad}), config {cfg} ({}): worst error ratio {r}", kernels::matmul_kernel::CONFIGS[cfg]);
            }
        }
    }
}

#[test]
fn transposed_views_use_strides() {
    let dev = tests::test_device();
    let (m, n, k) = (40, 24, 33);
    // b stored as (n, k) and viewed transposed: a non-contiguous (k, n) operand.
    let (bt, btv) = randn_f16(&dev, n, k, 10);
    let b = bt.t();
    assert!(!b.is_contiguous());
    let (a, av) = randn_f16(&dev, m, k, 11);
    let bv: Vec<f64> = (0..k).flat_map(|kk| (0..n).map(move |nn| (kk, nn))).map(|(kk, nn)| btv[nn * k + kk]).collect();
    let c = matmul(&a, &b, None).unwrap();
    assert_eq!(c.shape(), &[m, n]);
    let r = worst_ratio(&c.to_f64_vec(), &matmul_ref(&av, &bv, m, n, k, identity), ATOL, RTOL);
    assert!(r <= 1.0, "worst error ratio {r}");
}

/// Every operand a view with a storage offset: A transposed and narrowed on both dimensions,
/// B column-narrowed, and C (through `matmul_into`) a transposed, narrowed view of a poisoned
/// buffer whose other elements must stay untouched.
#[test]
fn views_with_offsets_use_strides_and_offsets() {
    let dev = tests::test_device();
    let (m, n, k) = (37, 29, 45);
    // A: (m, k) inside the transpose of a (k + 3, m + 2) matrix.
    let (a_base, a_basev) = randn_f16(&dev, k + 3, m + 2, 40);
    let a = a_base.t().narrow(0, 2, m).unwrap().narrow(1, 1, k).unwrap();
    assert_eq!((a.strides(), a.storage_offset()), (&[1, m + 2][..], (m + 2) + 2));
    let av: Vec<f64> = (0..m).flat_map(|i| (0..k).map(move |j| (i, j))).map(|(i, j)| a_basev[(j + 1) * (m + 2) + i + 2]).collect();
    assert_eq!(a.to_f64_vec(), av);
    // B: (k, n), columns 4.. of a (k, n + 6) matrix.
    let (b_base, b_basev) = randn_f16(&dev, k, n + 6, 41);
    let b = b_base.narrow(1, 4, n).unwrap();
    let bv: Vec<f64> = (0..k).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| b_basev[i * (n + 6) + j + 4]).collect();
    let want = matmul_ref(&av, &bv, m, n, k, identity);
    // C: (m, n) inside the transpose of a poisoned (n + 1, m + 1) buffer, one row and column in.
    let c_base = Tensor::<f16>::full(&dev, &[n + 1, m + 1], f16::NAN).unwrap();
    let c = c_base.t().narrow(0, 1, m).unwrap().narrow(1, 1, n).unwrap();
    matmul_into(&a, &b, &c, None).unwrap();
    let r = worst_ratio(&c.to_f64_vec(), &want, ATOL, RTOL);
    assert!(r <= 1.0, "worst error ratio {r}");
    let full = c_base.to_f64_vec();
    let outside = (0..=n).flat_map(|i| (0..=m).map(move |j| (i, j))).filter(|&(i, j)| i == 0 || j == 0);
    assert!(outside.into_iter().all(|(i, j)| full[i * (m + 1) + j].is_nan()), "wrote outside the view of C");
    // `matmul` allocates a contiguous C for the same views.
    let r = worst_ratio(&matmul(&a, &b, None).unwrap().to_f64_vec(), &want, ATOL, RTOL);
    assert!(r <= 1.0, "worst error ratio {r}");
}

#[test]
fn incompatible_dimensions_are_an_error() {
    let dev = tests::test_device();
    let (a, _) = randn_f16(&dev, 4, 5, 1);
    let (b, _) = randn_f16(&dev, 6, 3, 2);
    let err = matmul(&a, &b, None).unwrap_err();
    assert!(matches!(err, MatmulError::IncompatibleDimensions { a_cols: 5, b_rows: 6, .. }), "{err}");
    assert_eq!(err.to_string(), "incompatible dimensions: a is 4x5 but b is 6x3 (a's columns must equal b's rows)");
}

#[test]
fn non_matrix_is_an_error() {
    let dev = tests::test_device();
    let a = Tensor::<f16>::zeros(&dev, &[2, 3, 4]).unwrap();
    let (b, _) = randn_f16(&dev, 3, 3, 2);
    let err = matmul(&a, &b, None).unwrap_err();
    assert!(matches!(err, MatmulError::NotAMatrix { which: "a", .. }), "{err}");
}

#[test]
fn undeclared_activation_is_a_launch_error() {
    let dev = tests::test_device();
    let (a, _) = randn_f16(&dev, 8, 8, 1);
    let (b, _) = randn_f16(&dev, 8, 8, 2);
    let err = matmul(&a, &b, Some(Func::new("gelu"))).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("matmul_kernel") && msg.contains("ACTIVATION"), "{msg}");
}

/// The launches of the tests above again, with half of every launch's programs (the last ones)
/// split in 3 parts whatever the waves (`with_forced_split`; by default only last waves at most
/// half full are split), so the split entries of every config and activation run on small and
/// ragged grids. GPU only: the CPU backend does not split.
#[test]
fn every_launch_again_with_forced_splits() {
    if !tests::test_device().is_cuda() {
        return;
    }
    with_forced_split(|| {
        square_512_matches_reference();
        non_multiple_sizes_300x500x200();
        k_needs_masking();
        tiny_and_degenerate_shapes();
        fused_leaky_relu();
        fused_swish();
        every_autotune_config_is_correct();
        every_autotune_config_on_misaligned_and_aligned_views();
        every_autotune_config_on_tensor_map_shapes();
        every_autotune_config_on_wrapped_edges_next_to_nan();
        every_autotune_config_on_transposed_layouts();
        split_last_waves_match_the_reference();
        wide_split_plans_match_the_reference();
        transposed_views_use_strides();
        views_with_offsets_use_strides_and_offsets();
    });
}

/// Ragged sizes (masked edges in M, N and K) with forced splits: one short test, which
/// `scripts/gpu-check.sh` also runs under compute-sanitizer.
#[test]
fn forced_split_ragged_300x260x200() {
    with_forced_split(|| check(300, 260, 200, None, identity, 12));
}
