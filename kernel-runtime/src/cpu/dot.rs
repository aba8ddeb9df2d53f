//! [`dot`], the block matrix product (the hot path of the CPU backend).

use super::blk::Blk;
use super::broadcast::{broadcast_to, internal};
use super::num::{Float, Int};

/// `a @ b (+ acc)` for `a: [M, K]` and `b: [K, N]`, with products and sums in
/// f32 (Triton's `dot` with f32 accumulation). The operands may differ in type (`f8e4m3`
/// times `f8e5m2`). `acc` (broadcast to `[M, N]`)
/// is the starting value of the sums; without it they start at 0.
///
/// # Panics
/// When the blocks are not 2-D or the inner sizes differ (an internal error,
/// see [`Blk::from_vec`]).
///
/// ```
/// use kernel_runtime::__private::cpu::{dot, full, Blk};
/// use kernel_runtime::f16;
/// let a = Blk::from_vec(vec![2, 2], vec![1.0, 2.0, 3.0, 4.0].into_iter().map(f16::from_f32).collect());
/// let id = Blk::from_vec(vec![2, 2], vec![1.0, 0.0, 0.0, 1.0].into_iter().map(f16::from_f32).collect());
/// let acc = full(&[2, 2], 0.5f32);
/// assert_eq!(dot(&a, &id, Some(&acc)).data(), &[1.5, 2.5, 3.5, 4.5]);
/// ```
pub fn dot<A: Float, B: Float>(a: &Blk<A>, b: &Blk<B>, acc: Option<&Blk<f32>>) -> Blk<f32> {
    let (m, k, n) = dot_shape(&a.shape, &b.shape);
    // Convert each operand once; the loop below then runs on contiguous f32 rows.
    let af: Vec<f32> = a.data.iter().map(|&v| v.to_f32()).collect();
    let bf: Vec<f32> = b.data.iter().map(|&v| v.to_f32()).collect();
    let mut c = match acc {
        Some(acc) => broadcast_to(acc, &[m, n]).data,
        None => vec![0.0f32; m * n],
    };
    matmul_acc(&af, &bf, &mut c, k, n, |c, a, b| c + a * b);
    Blk { shape: vec![m, n], data: c }
}

/// `a @ b (+ acc)` for 8-bit integer blocks (`i8` or `u8`, in any combination): exact products,
/// sums in i32 that wrap (`mma`'s `.s32` accumulation without `.satfinite`).
///
/// ```
/// use kernel_runtime::__private::cpu::{dot_i32, Blk};
/// let a = Blk::from_vec(vec![1, 2], vec![-128i8, 127]);
/// let b = Blk::from_vec(vec![2, 1], vec![255u8, 2]);
/// assert_eq!(dot_i32(&a, &b, None).data(), &[-128 * 255 + 254]);
/// ```
pub fn dot_i32<A: Int, B: Int>(a: &Blk<A>, b: &Blk<B>, acc: Option<&Blk<i32>>) -> Blk<i32> {
    let (m, k, n) = dot_shape(&a.shape, &b.shape);
    let ai: Vec<i32> = a.data.iter().map(|&v| v.to_i64() as i32).collect();
    let bi: Vec<i32> = b.data.iter().map(|&v| v.to_i64() as i32).collect();
    let mut c = match acc {
        Some(acc) => broadcast_to(acc, &[m, n]).data,
        None => vec![0i32; m * n],
    };
    matmul_acc(&ai, &bi, &mut c, k, n, |c: i32, a: i32, b: i32| c.wrapping_add(a.wrapping_mul(b)));
    Blk { shape: vec![m, n], data: c }
}

/// `(M, K, N)` of a product of blocks of shapes `a` and `b`.
fn dot_shape(a: &[usize], b: &[usize]) -> (usize, usize, usize) {
    let (&[m, k], &[k2, n]) = (a, b) else {
        internal(format!("dot: expected 2-D blocks, found shapes {a:?} and {b:?}"));
    };
    if k != k2 {
        internal(format!("dot: inner sizes differ: {a:?} x {b:?}"));
    }
    (m, k, n)
}

/// `c[i, :] = mac(c[i, :], a[i, k], b[k, :])` for every `k` in order, row-major, i-k-j order so
/// that the innermost loop is a contiguous axpy that LLVM vectorizes (`mac` is inlined).
fn matmul_acc<T: Copy>(a: &[T], b: &[T], c: &mut [T], k: usize, n: usize, mac: impl Fn(T, T, T) -> T) {
    if n == 0 || k == 0 {
        return;
    }
    for (c_row, a_row) in c.chunks_exact_mut(n).zip(a.chunks_exact(k)) {
        for (&aik, b_row) in a_row.iter().zip(b.chunks_exact(n)) {
            for (cv, &bv) in c_row.iter_mut().zip(b_row) {
                *cv = mac(*cv, aik, bv);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use half::{bf16, f16};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::testing::matmul_ref_f64;
    use crate::{f8e4m3, f8e5m2};

    fn random_blk<T: Float>(rng: &mut StdRng, shape: [usize; 2]) -> Blk<T> {
        let data = (0..shape[0] * shape[1]).map(|_| T::from_f32(rng.random_range(-1.0..1.0))).collect();
        Blk::from_vec(shape.to_vec(), data)
    }

    fn check<T: Float>(m: usize, n: usize, k: usize, tol: f64) {
        check2::<T, T>(m, n, k, tol)
    }

    fn check2<T: Float, U: Float>(m: usize, n: usize, k: usize, tol: f64) {
        let mut rng = StdRng::seed_from_u64((m * 31 + n * 7 + k) as u64);
        let a = random_blk::<T>(&mut rng, [m, k]);
        let b = random_blk::<U>(&mut rng, [k, n]);
        let acc = random_blk::<f32>(&mut rng, [m, n]);
        let to64 = |v: &[T]| v.iter().map(|x| f64::from(x.to_f32())).collect::<Vec<f64>>();
        let to64u = |v: &[U]| v.iter().map(|x| f64::from(x.to_f32())).collect::<Vec<f64>>();
        let mut expected = matmul_ref_f64(&to64(a.data()), &to64u(b.data()), m, n, k);
        let got = dot(&a, &b, None);
        assert_eq!(got.shape(), &[m, n]);
        for (g, e) in got.data().iter().zip(&expected) {
            assert!((f64::from(*g) - e).abs() <= tol, "{m}x{n}x{k}: {g} vs {e}");
        }
        for (e, c) in expected.iter_mut().zip(acc.data()) {
            *e += f64::from(*c);
        }
        let got = dot(&a, &b, Some(&acc));
        for (g, e) in got.data().iter().zip(&expected) {
            assert!((f64::from(*g) - e).abs() <= tol, "{m}x{n}x{k} with acc: {g} vs {e}");
        }
    }

    #[test]
    fn matches_f64_reference_on_non_square_shapes() {
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 7), (16, 8, 32), (17, 33, 9), (64, 16, 128), (2, 40, 1)] {
            check::<f16>(m, n, k, 1e-4);
            check::<bf16>(m, n, k, 1e-4);
            check::<f32>(m, n, k, 1e-4);
            check::<f64>(m, n, k, 1e-4);
            check::<f8e4m3>(m, n, k, 1e-4);
            check2::<f8e4m3, f8e5m2>(m, n, k, 1e-4);
        }
    }

    #[test]
    fn integer_products_are_exact_and_wrap_in_i32() {
        let mut rng = StdRng::seed_from_u64(7);
        let (m, n, k) = (5, 7, 300);
        let a: Vec<i8> = (0..m * k).map(|_| rng.random_range(-128..=127)).collect();
        let b: Vec<u8> = (0..k * n).map(|_| rng.random_range(0..=255)).collect();
        let acc: Vec<i32> = (0..m * n).map(|_| rng.random_range(-1000..1000)).collect();
        let got = dot_i32(&Blk::from_vec(vec![m, k], a.clone()), &Blk::from_vec(vec![k, n], b.clone()), Some(&Blk::from_vec(vec![m, n], acc.clone())));
        for i in 0..m {
            for j in 0..n {
                let want = (0..k).map(|p| i64::from(a[i * k + p]) * i64::from(b[p * n + j])).sum::<i64>() + i64::from(acc[i * n + j]);
                assert_eq!(i64::from(got.data()[i * n + j]), want);
            }
        }
        // Sums past i32 wrap.
        let big = Blk::from_vec(vec![1, 4], vec![i32::MAX; 4]);
        let one = Blk::from_vec(vec![4, 1], vec![2i32, 0, 0, 0]);
        assert_eq!(dot_i32(&big, &one, None).data(), &[i32::MAX.wrapping_mul(2)]);
    }

    #[test]
    fn empty_inner_dimension_gives_acc() {
        let a = Blk::from_vec(vec![2, 0], Vec::<f32>::new());
        let b = Blk::from_vec(vec![0, 3], Vec::<f32>::new());
        assert_eq!(dot(&a, &b, None).data(), &[0.0; 6]);
        assert_eq!(dot(&a, &b, Some(&Blk::scalar(2.0))).data(), &[2.0; 6]);
    }

    #[test]
    #[should_panic(expected = "dot: inner sizes differ")]
    fn inner_mismatch_is_internal() {
        let a = Blk::from_vec(vec![2, 3], vec![0.0f32; 6]);
        dot(&a, &a, None);
    }
}
