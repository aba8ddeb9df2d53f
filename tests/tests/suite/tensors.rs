//! Tensor constructors and views on the test device (the CPU, or the GPU with
//! `KERNEL_TEST_DEVICE=cuda`): sizes that overflow or cannot be allocated, and views out of
//! range, are typed errors, never a panic or an abort.

use kernel_runtime::{Tensor, TensorError};
use tests::test_device;

#[test]
fn sizes_that_overflow_are_errors_before_any_allocation() {
    let dev = test_device();
    for shape in [&[1usize << 62][..], &[usize::MAX, 2], &[1 << 40, 1 << 40]] {
        let err = Tensor::<f32>::zeros(&dev, shape).unwrap_err();
        assert!(matches!(&err, TensorError::ShapeOverflow { shape: s, elem_bytes: 4 } if s == shape), "{err}");
        assert!(err.to_string().contains("has more elements than fit in memory"), "{err}");
        assert!(matches!(Tensor::<i64>::full(&dev, shape, 1), Err(TensorError::ShapeOverflow { elem_bytes: 8, .. })));
        assert!(matches!(Tensor::<f32>::randn(&dev, shape, 0), Err(TensorError::ShapeOverflow { .. })));
    }
}

/// 2^62 bytes: within `isize::MAX`, so an allocation is attempted, and refused (no machine
/// has that much memory or address space). On a GPU, `zeros` asks the driver and `full` first
/// stages the data in host memory.
#[test]
fn allocations_that_fail_are_errors() {
    let dev = test_device();
    let shape = [1usize << 60];
    let err = Tensor::<f32>::zeros(&dev, &shape).unwrap_err();
    assert!(matches!(&err, TensorError::OutOfMemory { bytes, device, .. } if *bytes == 1 << 62 && *device == dev.to_string()), "{err}");
    assert!(err.to_string().starts_with(&format!("cannot allocate 4611686018427387904 bytes on {dev}: ")), "{err}");
    let staging = if dev.is_cpu() { "cpu".to_string() } else { "host memory".to_string() };
    for result in [Tensor::<f32>::full(&dev, &shape, 1.0), Tensor::<f32>::rand_uniform(&dev, &shape, 0.0, 1.0, 0)] {
        let err = result.unwrap_err();
        assert!(matches!(&err, TensorError::OutOfMemory { device, .. } if *device == staging), "{err}");
    }
    // The device is still usable afterwards.
    assert_eq!(Tensor::<f32>::full(&dev, &[3], 2.0).unwrap().to_vec(), vec![2.0; 3]);
}

#[test]
fn views_out_of_range_are_errors() {
    let dev = test_device();
    let t = Tensor::<f32>::zeros(&dev, &[5, 2]).unwrap();
    let err = t.narrow(0, 3, 4).unwrap_err();
    assert_eq!(err.to_string(), "narrow(dim 0, start 3, len 4) is out of range: dimension 0 has size 5");
    assert_eq!(t.narrow(2, 0, 1).unwrap_err(), TensorError::DimOutOfRange { dim: 2, rank: 2 });
    assert_eq!(t.transpose(0, 2).unwrap_err(), TensorError::DimOutOfRange { dim: 2, rank: 2 });
    // `t()` of a 1-D tensor is the tensor itself.
    let v = Tensor::<f32>::zeros(&dev, &[4]).unwrap();
    assert_eq!((v.t().shape(), v.t().strides()), (&[4usize][..], &[1usize][..]));
}
