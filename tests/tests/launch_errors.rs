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
