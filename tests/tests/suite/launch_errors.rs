//! Launch-time validation: bad grids, undeclared instances and out-of-range configs are typed
//! errors that name what was expected and what was given; nothing panics.

use examples::matmul::kernels::matmul_kernel;
use examples::vector_add::add_kernel;
use kernel_runtime::{f16, Func, LaunchError, Tensor};
use tests::test_device;

fn vectors() -> (Tensor<f32>, Tensor<f32>, Tensor<f32>) {
    let dev = test_device();
    let x = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    (x.clone(), x.clone(), x)
}

#[test]
fn negative_grid_is_an_error() {
    let (x, y, o) = vectors();
    let err = add_kernel::launch((-1i32,), &x, &y, &o, 8, 256).unwrap_err();
    assert!(matches!(err, LaunchError::InvalidGrid { .. }), "{err:?}");
    assert!(err.to_string().contains("-1"), "{err}");
}

#[test]
fn grid_beyond_the_hardware_limit_is_an_error() {
    let (x, y, o) = vectors();
    let err = add_kernel::launch((1u64 << 40,), &x, &y, &o, 8, 256).unwrap_err();
    assert!(matches!(err, LaunchError::InvalidGrid { .. }), "{err:?}");
    let err = add_kernel::launch((1, 70_000, 1), &x, &y, &o, 8, 256).unwrap_err();
    assert!(matches!(err, LaunchError::InvalidGrid { .. }), "{err:?}");
}

#[test]
fn a_zero_sized_grid_runs_nothing() {
    let (x, y, o) = vectors();
    o.fill(5.0);
    add_kernel::launch((0,), &x, &y, &o, 8, 256).unwrap();
    assert!(o.to_vec().iter().all(|v| *v == 5.0));
}

#[test]
fn config_index_out_of_range_is_an_error() {
    let dev = test_device();
    let a = Tensor::<f16>::zeros(&dev, &[16, 16]).unwrap();
    let n = matmul_kernel::CONFIGS.len();
    let err = matmul_kernel::launch_config(n, (1,), &a, &a, &a, 16, 16, 16, 16, 1, 16, 1, 16, 1, None).unwrap_err();
    assert!(matches!(err, LaunchError::NoInstance { kernel: "matmul_kernel", .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("config index {n} is out of range")), "{err}");
}

#[test]
fn undeclared_function_meta_value_is_an_error() {
    let dev = test_device();
    let a = Tensor::<f16>::zeros(&dev, &[16, 16]).unwrap();
    let err = matmul_kernel::launch((1,), &a, &a, &a, 16, 16, 16, 16, 1, 16, 1, 16, 1, Some(Func::new("gelu"))).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("ACTIVATION in [None, leaky_relu, swish]"), "{msg}");
}

#[test]
fn errors_name_the_kernel() {
    let (x, y, o) = vectors();
    let err = add_kernel::launch((1,), &x, &y, &o, 8, 300).unwrap_err();
    assert_eq!(err.to_string(), "kernel `add_kernel` has no instance for this launch: BLOCK_SIZE = 300 is not a declared instance (declared: 256, 1024)");
}

/// A launch told to read and write past its tensors (`n_elements` larger than the buffers) is
/// an out-of-bounds error on every device, naming the kernel, line, argument, index and
/// length: the CPU backend stops at the access, the GPU skips every such access (no memory
/// outside the buffers is touched) and reports the first one when the device next
/// synchronizes. The device stays usable afterwards.
#[test]
fn accesses_past_the_buffers_are_reported_on_every_device() {
    let dev = test_device();
    let n = 100usize;
    let x = Tensor::<f32>::randn(&dev, &[n], 31).unwrap();
    let y = Tensor::<f32>::randn(&dev, &[n], 32).unwrap();
    let out = Tensor::<f32>::full(&dev, &[n], f32::NAN).unwrap();
    let launched = add_kernel::launch((1,), &x, &y, &out, 2 * n as i32, 256);
    // With KERNEL_SYNC=1 the GPU reports it from the launch itself.
    let msg = match launched {
        Err(e) => e.to_string(),
        Ok(()) => dev.synchronize().expect_err("the out-of-bounds accesses were not reported").to_string(),
    };
    assert!(msg.contains("out-of-bounds") && msg.contains("kernel `add_kernel`"), "{msg}");
    assert!(msg.contains("line 13") || msg.contains("line 14") || msg.contains("line 15"), "{msg}");
    assert!(["`x_ptr`", "`y_ptr`", "`output_ptr`"].iter().any(|a| msg.contains(a)), "{msg}");
    assert!(msg.contains("(length 100)"), "{msg}");
    let index: i64 = msg.split("index ").nth(1).and_then(|s| s.split(' ').next()).and_then(|s| s.parse().ok()).expect(&msg);
    assert!((100..200).contains(&index), "{msg}");
    // Reported once: the next synchronization is clean, and a correct launch works.
    dev.synchronize().unwrap();
    add_kernel::launch((1,), &x, &y, &out, n as i32, 256).unwrap();
    let want: Vec<f32> = x.to_vec().iter().zip(y.to_vec()).map(|(a, b)| a + b).collect();
    assert_eq!(out.to_vec(), want);
}

/// A matmul launched with strides that address past `b` (the caller claims K = 64 rows of a
/// 32-row tensor): reported, not silently read from neighbouring memory.
#[test]
fn a_wrong_stride_is_reported_not_read() {
    let dev = test_device();
    let a = Tensor::<f16>::zeros(&dev, &[64, 64]).unwrap();
    let b = Tensor::<f16>::zeros(&dev, &[32, 64]).unwrap();
    let c = Tensor::<f16>::zeros(&dev, &[64, 64]).unwrap();
    let launched = matmul_kernel::launch_config(2, (1,), &a, &b, &c, 64, 64, 64, 64, 1, 64, 1, 64, 1, None);
    let msg = match launched {
        Err(e) => e.to_string(),
        Ok(()) => dev.synchronize().expect_err("the out-of-bounds reads of b were not reported").to_string(),
    };
    assert!(msg.contains("out-of-bounds") && msg.contains("`b_ptr`") && msg.contains("(length 2048)"), "{msg}");
    dev.synchronize().unwrap();
}

/// The same with only the last K tile past `b` (K = 160 claimed, 144 rows), in every config:
/// the earlier iterations are in bounds and only the last one's copies reach past `b`; they are
/// reported, not read (on the GPU the bounds proof before the K loop fails, so the loop takes
/// its checked copies).
#[test]
fn a_wrong_stride_in_the_last_k_tile_is_reported_in_every_config() {
    let dev = test_device();
    let a = Tensor::<f16>::zeros(&dev, &[64, 160]).unwrap();
    let b = Tensor::<f16>::zeros(&dev, &[144, 64]).unwrap();
    let c = Tensor::<f16>::zeros(&dev, &[64, 64]).unwrap();
    for cfg in 0..matmul_kernel::CONFIGS.len() {
        let launched = matmul_kernel::launch_config(cfg, (1,), &a, &b, &c, 64, 64, 160, 160, 1, 64, 1, 64, 1, None);
        let msg = match launched {
            Err(e) => e.to_string(),
            Ok(()) => dev.synchronize().expect_err("the out-of-bounds reads of b were not reported").to_string(),
        };
        assert!(msg.contains("out-of-bounds") && msg.contains("`b_ptr`") && msg.contains("(length 9216)"), "config {cfg}: {msg}");
        dev.synchronize().unwrap();
    }
}

/// A pointer block selected between two parameters (`where_(c, x + i, y + i)`) cannot be
/// attributed to one buffer: on the GPU it is checked against all the kernel's buffers, so an
/// access past them is still skipped and reported, and in-bounds selections work.
#[test]
fn pointers_mixing_two_arguments_are_checked_too() {
    use tests::kernels::pick;
    let dev = test_device();
    let x = Tensor::<f32>::from_vec(&dev, &[16], (0..16).map(|v| v as f32).collect()).unwrap();
    let y = Tensor::<f32>::from_vec(&dev, &[16], (0..16).map(|v| -(v as f32)).collect()).unwrap();
    let out = Tensor::<f32>::full(&dev, &[16], f32::NAN).unwrap();
    pick::launch((1,), &x, &y, &out, 16, 0, 64).unwrap();
    let want: Vec<f32> = (0..16).map(|v| if v % 2 == 0 { v as f32 } else { -(v as f32) }).collect();
    assert_eq!(out.to_vec(), want);
    // An offset of 10 000 elements points far outside every buffer.
    let launched = pick::launch((1,), &x, &y, &out, 16, 10_000, 64);
    let msg = match launched {
        Err(e) => e.to_string(),
        Ok(()) => dev.synchronize().expect_err("the out-of-bounds reads were not reported").to_string(),
    };
    assert!(msg.contains("out-of-bounds") && msg.contains("kernel `pick`"), "{msg}");
    dev.synchronize().unwrap();
}

/// An access outside its buffer before an early `return` is reported (on the GPU the thread's
/// noted fault is written when the body ends, `return` included); without the fault both
/// paths run.
#[test]
fn an_access_past_the_buffer_before_a_return_is_reported() {
    use tests::kernels::copy_then_return;
    let dev = test_device();
    let x = Tensor::<f32>::from_vec(&dev, &[16], (0..16).map(|v| v as f32).collect()).unwrap();
    let out = Tensor::<f32>::full(&dev, &[16], f32::NAN).unwrap();
    for stop in [1, 0] {
        copy_then_return::launch((1,), &x, &out, 16, stop, 64).unwrap();
        let want: Vec<f32> = (0..16).map(|v| v as f32 + if stop == 0 { 1.0 } else { 0.0 }).collect();
        assert_eq!(out.to_vec(), want, "stop = {stop}");
        let launched = copy_then_return::launch((1,), &x, &out, 40, stop, 64);
        let msg = match launched {
            Err(e) => e.to_string(),
            Ok(()) => dev.synchronize().expect_err("the out-of-bounds reads were not reported").to_string(),
        };
        assert!(msg.contains("out-of-bounds") && msg.contains("kernel `copy_then_return`") && msg.contains("`x`"), "stop = {stop}: {msg}");
        assert!(msg.contains("(length 16)"), "{msg}");
        dev.synchronize().unwrap();
    }
}
