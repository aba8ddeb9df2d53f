//! The debugging builtins on both backends (`KERNEL_TEST_DEVICE=cuda` for the GPU): a failed
//! `device_assert` is a typed error naming the kernel, the line, the message, the program, the
//! first failing element and the values of the condition's operands; kernels that assert and
//! pass compute as without; `device_print` writes its lines (checked in a child process, which
//! owns its stdout).

use kernel_runtime::cpu::{AssertionFailure, KernelError};
use kernel_runtime::{Device, LaunchError, Tensor};
use tests::debug::{barrier_exchange, checked_dot, checked_double, checked_row_sums, printed, unchecked_double};
use tests::{assertion_failure, test_device};

/// Lines of the `device_assert`s in `tests/src/debug.rs`.
const SCALAR_LINE: u32 = 12;
const BLOCK_LINE: u32 = 16;
const NAN_LINE: u32 = 26;
const SUM_LINE: u32 = 28;
const DOT_LINE: u32 = 39;

fn ints(dev: &Device, v: Vec<i32>) -> Tensor<i32> {
    let n = v.len();
    Tensor::from_vec(dev, &[n], v).unwrap()
}

#[test]
fn passing_assertions_change_nothing() {
    let dev = test_device();
    let n = 200usize;
    let x = ints(&dev, (0..n as i32).collect());
    let out = ints(&dev, vec![-1; n]);
    checked_double::launch((n.div_ceil(64),), &x, &out, 1000, n as i32, 64).unwrap();
    dev.synchronize().unwrap();
    assert_eq!(out.to_vec(), (0..n as i32).map(|v| 2 * v).collect::<Vec<_>>());
}

/// `#[kernel(asserts = false)]`: assertions that would fail (a negative-free `n` aside, every
/// value is at or above the limit) are not run; the kernel computes as without them.
#[test]
fn kernels_without_asserts_do_not_check() {
    let dev = test_device();
    let n = 100usize;
    let x = ints(&dev, (0..n as i32).collect());
    let out = ints(&dev, vec![-1; n]);
    unchecked_double::launch((n.div_ceil(64),), &x, &out, 0, n as i32, 64).unwrap();
    dev.synchronize().unwrap();
    assert_eq!(out.to_vec(), (0..n as i32).map(|v| 2 * v).collect::<Vec<_>>());
}

/// `debug_barrier()`: values stored by one thread are read by another after it.
#[test]
fn debug_barrier_orders_the_block() {
    let dev = test_device();
    let x = ints(&dev, (0..128).map(|v| v * 3).collect());
    let (out, out2) = (ints(&dev, vec![-1; 128]), ints(&dev, vec![-1; 128]));
    barrier_exchange::launch((1,), &x, &out, &out2, 128).unwrap();
    assert_eq!(out2.to_vec(), (0..128).map(|i| ((i + 1) % 128) * 3 + 1).collect::<Vec<_>>());
}

/// One value of program 1 is too large: its element 13 is reported with both sides of `v < limit`.
#[test]
fn a_failing_block_assertion_reports_the_element_and_the_values() {
    let dev = test_device();
    let n = 200usize;
    let mut v: Vec<i32> = (0..n as i32).map(|i| i % 50).collect();
    v[64 + 13] = 1000;
    v[64 + 40] = 2000;
    let (x, out) = (ints(&dev, v), ints(&dev, vec![0; n]));
    let f = assertion_failure(&dev, checked_double::launch((n.div_ceil(64),), &x, &out, 100, n as i32, 64));
    assert_eq!((f.kernel, f.line, f.condition.as_str(), f.message.as_str()), ("checked_double", BLOCK_LINE, "v < limit", "values stay below the limit"));
    assert_eq!((f.program, f.index), ([1, 0, 0], Some(13)));
    assert_eq!(f.operands, [("v".to_string(), "1000".to_string()), ("limit".to_string(), "100".to_string())]);
    let msg = f.to_string();
    assert!(msg.starts_with(&format!("device_assert failed in kernel `checked_double` at line {BLOCK_LINE}, column 5: values stay below the limit: `v < limit` is false at element 13 of program (1, 0, 0), where v = 1000, limit = 100")), "{msg}");
    // The program went on (GPU) or stopped (CPU); either way a correct launch then works.
    checked_double::launch((n.div_ceil(64),), &x, &out, 5000, n as i32, 64).unwrap();
    dev.synchronize().unwrap();
}

#[test]
fn a_failing_scalar_assertion_has_no_element() {
    let dev = test_device();
    let (x, out) = (ints(&dev, vec![0; 4]), ints(&dev, vec![0; 4]));
    let f = assertion_failure(&dev, checked_double::launch((1,), &x, &out, 100, -3, 64));
    assert_eq!((f.line, f.index, f.program), (SCALAR_LINE, None, [0, 0, 0]));
    assert_eq!(f.operands, [("n".to_string(), "-3".to_string()), ("0".to_string(), "0".to_string())]);
    assert!(f.to_string().contains("n is not negative: `n >= 0` is false in program (0, 0, 0), where n = -3, 0 = 0"), "{f}");
}

/// A 2-D condition reports the row-major index; one without a comparison has no operands; a
/// reduction's result is reported in its dtype.
#[test]
fn two_dimensional_and_reduced_conditions() {
    let dev = test_device();
    let run = |v: Vec<f32>| {
        let x = Tensor::from_vec(&dev, &[8, 16], v).unwrap();
        let out = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
        let r = checked_row_sums::launch((1,), &x, &out, 8, 16);
        (r, out)
    };
    let (r, out) = run((0..128).map(|i| (i % 7) as f32).collect());
    r.unwrap();
    dev.synchronize().unwrap();
    assert_eq!(out.to_vec()[0], (0..16).map(|i| (i % 7) as f32).sum::<f32>());

    let mut v = vec![1.0f32; 128];
    v[3 * 16 + 5] = f32::NAN;
    let f = assertion_failure(&dev, run(v).0);
    assert_eq!((f.line, f.index, f.condition.as_str()), (NAN_LINE, Some(53), "!isnan(v)"));
    assert!(f.operands.is_empty());

    let mut v = vec![1.0f32; 128];
    v[2 * 16..3 * 16].fill(-100.0);
    let f = assertion_failure(&dev, run(v).0);
    assert_eq!((f.line, f.index, f.message.as_str()), (SUM_LINE, Some(2), "row sums are small"));
    assert_eq!(f.operands, [("s.abs()".to_string(), "1600".to_string()), ("1000.0".to_string(), "1000".to_string())]);
}

/// The accumulator of a tensor-core `dot` (in the GPU's `mma` layout) asserted elementwise.
#[test]
fn an_assertion_on_a_dot_result() {
    use kernel_runtime::f16;
    let dev = test_device();
    let eye: Vec<f16> = (0..256).map(|i| f16::from_f32(if i / 16 == i % 16 { 1.0 } else { 0.0 })).collect();
    let mut b: Vec<f16> = (0..256).map(|i| f16::from_f32((i % 16) as f32)).collect();
    let a = Tensor::from_vec(&dev, &[16, 16], eye).unwrap();
    let c = Tensor::<f32>::zeros(&dev, &[16, 16]).unwrap();
    let bt = Tensor::from_vec(&dev, &[16, 16], b.clone()).unwrap();
    checked_dot::launch((1,), &a, &bt, &c, 100.0).unwrap();
    dev.synchronize().unwrap();
    assert_eq!(c.to_vec()[16 * 3 + 7], 7.0);
    b[5 * 16 + 7] = f16::from_f32(500.0);
    let bt = Tensor::from_vec(&dev, &[16, 16], b).unwrap();
    let f = assertion_failure(&dev, checked_dot::launch((1,), &a, &bt, &c, 100.0));
    assert_eq!((f.kernel, f.line, f.index), ("checked_dot", DOT_LINE, Some(5 * 16 + 7)));
    assert_eq!(f.operands, [("acc".to_string(), "500".to_string()), ("limit".to_string(), "100".to_string())]);
}

/// The CPU backend's error is `KernelError::Assertion`, inside `LaunchError::Kernel`.
#[test]
fn the_cpu_error_is_typed() {
    let dev = Device::cpu();
    let (x, out) = (ints(&dev, vec![0; 4]), ints(&dev, vec![0; 4]));
    let e = checked_double::launch((1,), &x, &out, 100, -1, 64).unwrap_err();
    assert!(matches!(e, LaunchError::Kernel(KernelError::Assertion(AssertionFailure { line: SCALAR_LINE, .. }))), "{e:?}");
}

/// The lines `printed` writes for `x = [1.5, -2.25, 0.5, 4, 8]` over two programs of 4.
fn expected_print_lines() -> Vec<String> {
    let x = [1.5f32, -2.25, 0.5, 4.0, 8.0];
    let mut lines = Vec::new();
    for p in 0..2 {
        for j in 0..4 {
            let i = p * 4 + j;
            let (v, m) = if i < 5 { (x[i], true) } else { (0.0, false) };
            lines.push(format!("pid ({p}, 0, 0) idx ({j}) x, offs, m = {v}, {i}, {m}"));
        }
        lines.push(format!("pid ({p}, 0, 0) n: 5"));
        lines.push(format!("pid ({p}, 0, 0) done"));
    }
    lines
}

/// Run by `device_print_writes_its_lines` in a child process (ignored otherwise).
#[test]
#[ignore = "run by device_print_writes_its_lines in a child process"]
fn print_child() {
    let dev = test_device();
    let x = Tensor::from_vec(&dev, &[5], vec![1.5f32, -2.25, 0.5, 4.0, 8.0]).unwrap();
    let out = Tensor::<f32>::zeros(&dev, &[5]).unwrap();
    printed::launch((2,), &x, &out, 5, 4).unwrap();
    assert_eq!(out.to_vec(), vec![2.5, -1.25, 1.5, 5.0, 9.0]);
    dev.synchronize().unwrap();
}

/// Every line `device_print` writes, in some order (programs, and threads on the GPU, run in
/// parallel): the child's stdout holds them, whole.
#[test]
fn device_print_writes_its_lines() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe).args(["--exact", "debug::print_child", "--ignored", "--nocapture", "--test-threads=1"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // The test harness writes `test debug::print_child ... ` before the first line.
    let mut got: Vec<&str> = stdout.lines().filter_map(|l| l.find("pid (").map(|i| &l[i..])).collect();
    let mut want = expected_print_lines();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}
