//! Out-of-bounds accesses and other run-time faults on the CPU backend are reported as
//! errors naming the kernel, the source line and the index; they never touch memory outside
//! the buffer and never crash the process.

use kernel_runtime::cpu::KernelError;
use kernel_runtime::{Device, LaunchError, Tensor};
use kernel_std::prelude::*;

/// Copies 64 elements per program with no mask: out of bounds when n is not a multiple of 64.
#[kernel(BLOCK = [64])]
fn unmasked_copy<const BLOCK: i32>(src: Ptr<f32>, dst: Ptr<f32>) {
    let offs = program_id(0) * BLOCK + arange(0, BLOCK);
    let x = load(src + offs);
    store(dst + offs, x);
}

const LOAD_LINE: u32 = 13;
const STORE_LINE: u32 = 14;

/// Stores through a pointer with a negative offset.
#[kernel]
fn store_before_start(dst: Ptr<f32>, off: i32) {
    store(dst + off, 1.0);
}

/// Integer division by a runtime zero.
#[kernel]
fn divide(dst: Ptr<i32>, d: i32) {
    store(dst, 10 / d);
}

#[test]
fn out_of_bounds_load_is_reported_with_kernel_line_and_index() {
    let dev = Device::cpu();
    let src = Tensor::<f32>::zeros(&dev, &[100]).unwrap();
    let dst = Tensor::<f32>::zeros(&dev, &[128]).unwrap();
    let err = unmasked_copy::launch((2,), &src, &dst, 64).unwrap_err();
    match &err {
        LaunchError::Kernel(KernelError::OutOfBounds { kernel, line, op, index, len, arg, .. }) => {
            assert_eq!(*kernel, "unmasked_copy");
            assert_eq!(*line, LOAD_LINE);
            assert_eq!(*op, "load");
            assert_eq!(*arg, "src");
            assert!((100..128).contains(index), "index {index}");
            assert_eq!(*len, 100);
        }
        other => panic!("expected an out-of-bounds load, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("unmasked_copy") && msg.contains(&format!("line {LOAD_LINE}")), "{msg}");
}

#[test]
fn out_of_bounds_store_is_reported_and_nothing_outside_is_written() {
    let dev = Device::cpu();
    let src = Tensor::<f32>::full(&dev, &[128], 3.0).unwrap();
    let dst = Tensor::<f32>::zeros(&dev, &[100]).unwrap();
    let err = unmasked_copy::launch((2,), &src, &dst, 64).unwrap_err();
    match &err {
        LaunchError::Kernel(KernelError::OutOfBounds { line, op, arg, len, .. }) => {
            assert_eq!((*line, *op, *arg, *len), (STORE_LINE, "store", "dst", 100));
        }
        other => panic!("expected an out-of-bounds store, got {other:?}"),
    }
}

#[test]
fn negative_offset_is_out_of_bounds() {
    let dev = Device::cpu();
    let dst = Tensor::<f32>::zeros(&dev, &[4]).unwrap();
    let err = store_before_start::launch((1,), &dst, -1).unwrap_err();
    assert!(matches!(err, LaunchError::Kernel(KernelError::OutOfBounds { index: -1, .. })), "{err:?}");
    assert!(dst.to_vec().iter().all(|v| *v == 0.0));
    store_before_start::launch((1,), &dst, 3).unwrap();
    assert_eq!(dst.to_vec(), vec![0.0, 0.0, 0.0, 1.0]);
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let dev = Device::cpu();
    let dst = Tensor::<i32>::zeros(&dev, &[1]).unwrap();
    divide::launch((1,), &dst, 5).unwrap();
    assert_eq!(dst.to_vec(), vec![2]);
    let err = divide::launch((1,), &dst, 0).unwrap_err();
    assert!(matches!(err, LaunchError::Kernel(KernelError::DivisionByZero { kernel: "divide", .. })), "{err:?}");
}

#[test]
fn masked_lanes_are_never_checked_or_touched() {
    // A full-extent masked copy over a buffer that is not a multiple of the block.
    #[kernel(BLOCK = [64])]
    fn masked_copy<const BLOCK: i32>(src: Ptr<f32>, dst: Ptr<f32>, n: i32) {
        let offs = program_id(0) * BLOCK + arange(0, BLOCK);
        let m = offs < n;
        store(dst + offs, load(src + offs, m, -1.0), m);
    }
    let dev = Device::cpu();
    let src = Tensor::<f32>::randn(&dev, &[100], 1).unwrap();
    let dst = Tensor::<f32>::zeros(&dev, &[100]).unwrap();
    masked_copy::launch((2,), &src, &dst, 100, 64).unwrap();
    assert_eq!(dst.to_vec(), src.to_vec());
}
