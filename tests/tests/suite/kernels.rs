//! Vector add on the CPU backend against float64 references, on contiguous tensors and on
//! views (transposed, narrowed with a storage offset, strided). Softmax is in `softmax.rs`.

use examples::vector_add::{add, add_kernel};
use kernel_runtime::{LaunchError, Tensor};
use tests::worst_ratio;

#[test]
fn vector_add_matches_reference_with_ragged_tail() {
    let dev = tests::test_device();
    for &n in &[1usize, 1000, 1024, 98_432 + 7] {
        let x = Tensor::<f32>::randn(&dev, &[n], 1).unwrap();
        let y = Tensor::<f32>::randn(&dev, &[n], 2).unwrap();
        let out = add(&x, &y).unwrap();
        let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
        // f32 addition is correctly rounded: the error is at most half an ulp.
        assert!(worst_ratio(&out.to_f64_vec(), &want, 0.0, 1.2e-7) <= 1.0, "n = {n}");
    }
}

#[test]
fn vector_add_every_declared_block_size() {
    let dev = tests::test_device();
    let n = 777;
    let x = Tensor::<f32>::randn(&dev, &[n], 3).unwrap();
    let y = Tensor::<f32>::randn(&dev, &[n], 4).unwrap();
    for block in [256, 1024] {
        let out = Tensor::<f32>::full(&dev, &[n], f32::NAN).unwrap();
        add_kernel::launch(|m: &add_kernel::Meta| (kernel_runtime::cdiv(n as i32, m.BLOCK_SIZE),), &x, &y, &out, n as i32, block).unwrap();
        let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
        assert!(worst_ratio(&out.to_f64_vec(), &want, 0.0, 1.2e-7) <= 1.0);
    }
}

/// Views at odd element offsets: the chunks of 4 elements a thread owns are not 16-byte
/// aligned, so the vector loads and stores fall back to single elements (on the GPU); the
/// elements just outside the output view stay untouched.
#[test]
fn vector_add_on_misaligned_views() {
    let dev = tests::test_device();
    let n = 4096 + 3;
    let base_x = Tensor::<f32>::randn(&dev, &[n + 8], 21).unwrap();
    let base_y = Tensor::<f32>::randn(&dev, &[n + 8], 22).unwrap();
    for (ox, oy, oo) in [(1, 3, 2), (0, 0, 1), (4, 4, 4)] {
        let x = base_x.narrow(0, ox, n).unwrap();
        let y = base_y.narrow(0, oy, n).unwrap();
        let out_full = Tensor::<f32>::full(&dev, &[n + 8], f32::NAN).unwrap();
        let out = out_full.narrow(0, oo, n).unwrap();
        for block in [256, 1024] {
            add_kernel::launch(|m: &add_kernel::Meta| (kernel_runtime::cdiv(n as i32, m.BLOCK_SIZE),), &x, &y, &out, n as i32, block).unwrap();
            let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
            assert!(worst_ratio(&out.to_f64_vec(), &want, 0.0, 1.2e-7) <= 1.0, "offsets {ox} {oy} {oo}, block {block}");
            let full = out_full.to_f64_vec();
            assert!(full[..oo].iter().chain(&full[oo + n..]).all(|v| v.is_nan()), "wrote outside the output view");
        }
    }
}

#[test]
fn undeclared_block_size_is_a_launch_error() {
    let dev = tests::test_device();
    let x = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    let err = add_kernel::launch((1,), &x, &x, &x, 8, 512).unwrap_err();
    assert!(matches!(err, LaunchError::NoInstance { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("BLOCK_SIZE = 512") && msg.contains("256, 1024"), "{msg}");
}

#[test]
fn vector_add_shape_mismatch_is_an_error() {
    let dev = tests::test_device();
    let x = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    let y = Tensor::<f32>::zeros(&dev, &[9]).unwrap();
    assert!(matches!(add(&x, &y), Err(LaunchError::InvalidArgument { arg: "y", .. })));
}

/// `x + y` in float64 over the logical elements of two views of one shape.
fn add_ref(x: &Tensor<f32>, y: &Tensor<f32>) -> Vec<f64> {
    x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect()
}

fn check_add(x: &Tensor<f32>, y: &Tensor<f32>, what: &str) {
    let out = add(x, y).unwrap();
    assert_eq!(out.shape(), x.shape(), "{what}");
    assert!(out.is_contiguous(), "{what}");
    // f32 addition is correctly rounded: the error is at most half an ulp.
    let r = worst_ratio(&out.to_f64_vec(), &add_ref(x, y), 0.0, 1.2e-7);
    assert!(r <= 1.0, "{what}: ratio {r}");
}

/// `add` on views: transposed, narrowed with offsets, a column of a matrix (a strided vector),
/// mixed with contiguous operands, and N-D views whose leading dimensions merge.
#[test]
fn vector_add_of_views_matches_reference() {
    let dev = tests::test_device();
    // The case: `add(x.t(), y)` adds in the transposed order.
    let x = Tensor::from_vec(&dev, &[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let zero = Tensor::<f32>::zeros(&dev, &[3, 2]).unwrap();
    assert_eq!(add(&x.t(), &zero).unwrap().to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);

    let (m, n) = (70, 40);
    let a = Tensor::<f32>::randn(&dev, &[n, m], 31).unwrap();
    let b = Tensor::<f32>::randn(&dev, &[m, n + 9], 32).unwrap();
    let c = Tensor::<f32>::randn(&dev, &[m + 3, n], 33).unwrap();
    let (at, b_cols, c_rows) = (a.t(), b.narrow(1, 5, n).unwrap(), c.narrow(0, 3, m).unwrap());
    check_add(&at, &b_cols, "transposed + column-narrowed");
    check_add(&b_cols, &at, "column-narrowed + transposed");
    check_add(&at, &c_rows, "transposed + row-narrowed (contiguous, offset)");
    check_add(&c_rows, &b_cols, "row-narrowed + column-narrowed");
    check_add(&at, &at, "transposed + itself");
    let at_narrow = a.t().narrow(0, 10, 50).unwrap().narrow(1, 7, 30).unwrap();
    let b_narrow = b.narrow(0, 20, 50).unwrap().narrow(1, 1, 30).unwrap();
    check_add(&at_narrow, &b_narrow, "narrowed on both dimensions");

    // One column of a matrix: a strided vector of shape [m, 1].
    let col = b.narrow(1, 4, 1).unwrap();
    assert_eq!((col.strides(), col.storage_offset()), (&[n + 9, 1][..], 4));
    check_add(&col, &c.narrow(0, 0, m).unwrap().narrow(1, 2, 1).unwrap(), "two matrix columns");

    // 3-D: narrowing the last dimension keeps the leading ones mergeable.
    let t3 = Tensor::<f32>::randn(&dev, &[4, 5, 9], 34).unwrap();
    let u3 = Tensor::<f32>::randn(&dev, &[4, 5, 6], 35).unwrap();
    check_add(&t3.narrow(2, 2, 6).unwrap(), &u3, "3-D narrowed on the last dimension");
    check_add(&t3.narrow(2, 3, 6).unwrap(), &t3.narrow(2, 0, 6).unwrap(), "two 3-D narrowed views");
}

/// N-D views whose leading dimensions do not merge are refused with the argument named and
/// the fix; their contiguous copies are added.
#[test]
fn vector_add_refuses_views_it_cannot_index() {
    let dev = tests::test_device();
    let t = Tensor::<f32>::randn(&dev, &[4, 5, 6], 36).unwrap();
    let swapped = t.transpose(0, 1).unwrap();
    let other = Tensor::<f32>::randn(&dev, &[5, 4, 6], 37).unwrap();
    for (x, y, arg) in [(&swapped, &other, "x"), (&other, &swapped, "y")] {
        let err = add(x, y).unwrap_err();
        assert!(matches!(err, LaunchError::InvalidArgument { arg: a, .. } if a == arg), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("call .contiguous() first") && msg.contains("strides [6, 30, 1]"), "{msg}");
    }
    check_add(&swapped.contiguous(), &other, "contiguous copy of a 3-D transpose");
    let rows = t.narrow(1, 1, 3).unwrap();
    assert!(add(&rows, &rows).is_err(), "rows narrowed inside a 3-D tensor do not merge");
}
