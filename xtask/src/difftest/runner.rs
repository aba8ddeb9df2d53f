//! The differential test's runner (copied into each generated crate as `src/main.rs`): runs
//! every generated kernel on the CPU backend and, when a GPU is usable, on the GPU, with the
//! same inputs and poisoned outputs, and compares the results element by element.
//!
//! `difftest [--cpu-only] [--first I] [--count N] [--verbose]`; prints one line per mismatch
//! or error and a summary `difftest: N kernels (E exact), G on the GPU: M mismatches, F failures,
//! V writing nothing`; exits non-zero on any mismatch or failure.

use kernel_runtime::{DType, Device, Tensor};

mod cases;

/// How an input buffer is filled (see the generator's `Fill`).
pub enum Fill {
    Ints(i64),
    Reals(f64, f64),
}

/// A reproducible input: element `i` of buffer `which` of case `case` depends on nothing else.
pub fn input<T: DType>(dev: &Device, len: usize, fill: Fill, case: usize, which: usize) -> Result<Tensor<T>, String> {
    let mut state = (case as u64) << 20 ^ (which as u64) << 8 ^ 0x5eed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let data: Vec<T> = (0..len)
        .map(|_| {
            let v = match fill {
                Fill::Ints(m) => {
                    let span = (2 * m + 1) as u64;
                    let v = (next() % span) as i64 - m;
                    if T::KIND == kernel_runtime::DTypeKind::U32 { (v + m) as f64 } else { v as f64 }
                }
                Fill::Reals(lo, hi) => lo + (hi - lo) * ((next() >> 11) as f64 / (1u64 << 53) as f64),
            };
            T::from_f64(v)
        })
        .collect();
    Tensor::from_vec(dev, &[len.max(1)], if len == 0 { vec![T::from_f64(0.0)] } else { data }).map_err(|e| e.to_string())
}

/// An output buffer filled with a value no kernel computes (NaN for floats).
pub fn poisoned<T: DType>(dev: &Device, len: usize) -> Result<Tensor<T>, String> {
    let v = if T::from_f64(f64::NAN).to_f64().is_nan() { f64::NAN } else { 12_345.0 };
    Tensor::full(dev, &[len.max(1)], T::from_f64(v)).map_err(|e| e.to_string())
}

pub fn read<T: DType>(t: &Tensor<T>) -> Result<Vec<f64>, String> {
    t.try_to_f64_vec().map_err(|e| e.to_string())
}

/// One generated kernel: its name, family, whether it is exact, how to run it, and per output
/// the relative tolerance and magnitude scale (0 and 0: bit-exact).
pub struct Case {
    pub name: &'static str,
    pub family: &'static str,
    pub exact: bool,
    pub run: fn(&Device) -> Result<Vec<Vec<f64>>, String>,
    pub tol: &'static [(f64, f64)],
}

/// The first element where `gpu` differs from `cpu` beyond the tolerance, as a message.
pub fn compare(cpu: &[f64], gpu: &[f64], rtol: f64, scale: f64) -> Option<String> {
    if cpu.len() != gpu.len() {
        return Some(format!("lengths {} and {}", cpu.len(), gpu.len()));
    }
    let mut bad = 0usize;
    let mut first = None;
    for (i, (&c, &g)) in cpu.iter().zip(gpu).enumerate() {
        let same = c == g || (c.is_nan() && g.is_nan()) || (c - g).abs() <= rtol * (c.abs() + scale);
        if !same {
            bad += 1;
            first.get_or_insert(format!("element {i}: cpu {c:e}, gpu {g:e}"));
        }
    }
    first.map(|f| format!("{bad} of {} elements differ; first at {f}", cpu.len()))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| args.iter().any(|a| a == name);
    let value = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse::<usize>().ok());
    let (first, verbose) = (value("--first").unwrap_or(0), flag("--verbose"));
    let count = value("--count").unwrap_or(usize::MAX);
    let cpu = Device::cpu();
    let gpu = if flag("--cpu-only") {
        None
    } else {
        match Device::cuda(0) {
            Ok(d) => Some(d),
            Err(e) => {
                println!("difftest: no GPU ({e}); running the CPU backend only");
                None
            }
        }
    };
    let (mut ran, mut exact, mut on_gpu, mut mismatches, mut failures, mut vacuous) = (0, 0, 0, 0, 0, 0);
    let start = std::time::Instant::now();
    for case in cases::CASES.iter().skip(first).take(count) {
        ran += 1;
        exact += usize::from(case.exact);
        let want = match (case.run)(&cpu) {
            Ok(v) => v,
            Err(e) => {
                failures += 1;
                println!("FAIL {} ({}): the CPU backend failed: {e}", case.name, case.family);
                continue;
            }
        };
        // A kernel that writes nothing would agree vacuously: the generator must not make one.
        if want.iter().all(|o| o.iter().all(|v| v.is_nan() || *v == 12_345.0)) {
            vacuous += 1;
            println!("VACUOUS {} ({}): no output element was written", case.name, case.family);
        }
        let Some(gpu) = &gpu else { continue };
        on_gpu += 1;
        match (case.run)(gpu) {
            Err(e) => {
                failures += 1;
                println!("FAIL {} ({}): the GPU failed: {e}", case.name, case.family);
            }
            Ok(got) => {
                for (o, ((c, g), (rtol, scale))) in want.iter().zip(&got).zip(case.tol).enumerate() {
                    if let Some(m) = compare(c, g, *rtol, *scale) {
                        mismatches += 1;
                        println!("MISMATCH {} ({}, {}) output {o}: {m}", case.name, case.family, if case.exact { "exact" } else { "approximate" });
                    }
                }
            }
        }
        if verbose {
            println!("ok {} ({})", case.name, case.family);
        }
    }
    println!(
        "difftest: {ran} kernels ({exact} exact), {on_gpu} on the GPU: {mismatches} mismatches, {failures} failures, {vacuous} writing nothing ({:.1} s)",
        start.elapsed().as_secs_f64()
    );
    if mismatches + failures > 0 {
        std::process::exit(1);
    }
}
