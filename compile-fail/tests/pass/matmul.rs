// pass: matmul tiles built with as_col/as_row, accumulated with `dot(a, b, acc)` and with `acc += dot(a, b)`.
use kernel_runtime::{cdiv, Device, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK_M = [16], BLOCK_N = [32], BLOCK_K = [8])]
fn matmul_acc<const BLOCK_M: i32, const BLOCK_N: i32, const BLOCK_K: i32>(
    a_ptr: Ptr<f32>, b_ptr: Ptr<f32>, c_ptr: Ptr<f32>,
    M: i32, N: i32, K: i32,
) {
    let offs_m = program_id(0) * BLOCK_M + arange(0, BLOCK_M);
    let offs_n = program_id(1) * BLOCK_N + arange(0, BLOCK_N);
    let offs_k = arange(0, BLOCK_K);
    let mut a_ptrs = a_ptr + (offs_m.as_col() * K + offs_k.as_row());
    let mut b_ptrs = b_ptr + (offs_k.as_col() * N + offs_n.as_row());
    let mut acc = zeros::<f32>([BLOCK_M, BLOCK_N]);
    for k in 0..cdiv(K, BLOCK_K) {
        let k_left = K - k * BLOCK_K;
        let a = load(a_ptrs, (offs_m.as_col() < M) & (offs_k.as_row() < k_left), 0.0);
        let b = load(b_ptrs, (offs_k.as_col() < k_left) & (offs_n.as_row() < N), 0.0);
        acc = dot(a, b, acc);
        a_ptrs += BLOCK_K;
        b_ptrs += BLOCK_K * N;
    }
    let c_ptrs = c_ptr + offs_m.as_col() * N + offs_n.as_row();
    store(c_ptrs, acc, (offs_m.as_col() < M) & (offs_n.as_row() < N));
}

/// The same product with f16 inputs, `acc += dot(a, b)`, a transposed B tile and an f16 result.
#[kernel(BLOCK = [16])]
fn matmul_f16<const BLOCK: i32>(a_ptr: Ptr<f16>, bt_ptr: Ptr<f16>, c_ptr: Ptr<f16>, M: i32, N: i32, K: i32) {
    let offs_m = program_id(0) * BLOCK + arange(0, BLOCK);
    let offs_n = program_id(1) * BLOCK + arange(0, BLOCK);
    let offs_k = arange(0, BLOCK);
    let mut acc = zeros([BLOCK, BLOCK]);
    for k0 in (0..K).step_by(BLOCK) {
        let ks = k0 + offs_k;
        let a = load(a_ptr + offs_m.as_col() * K + ks.as_row(), (offs_m.as_col() < M) & (ks.as_row() < K), 0.0);
        // B is given transposed ([N, K]): load a [BLOCK_N, BLOCK_K] tile and transpose it.
        let bt = load(bt_ptr + offs_n.as_col() * K + ks.as_row(), (offs_n.as_col() < N) & (ks.as_row() < K), 0.0);
        acc += dot(a, bt.trans());
    }
    let c_ptrs = c_ptr + offs_m.expand_dims(1) * N + offs_n.expand_dims(0);
    store(c_ptrs, acc.to::<f16>(), (offs_m.as_col() < M) & (offs_n.as_row() < N));
}

fn main() {
    let dev = Device::cpu();
    let (m, n, k) = (37usize, 45usize, 21usize);
    // Small integers: every product and sum is exact in f32 (and the inputs in f16).
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7) % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 3) % 7) as f32 - 3.0).collect();
    let mut expected = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            expected[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }

    let at = Tensor::from_vec(&dev, &[m, k], a.clone()).unwrap();
    let bt = Tensor::from_vec(&dev, &[k, n], b.clone()).unwrap();
    let c = Tensor::<f32>::zeros(&dev, &[m, n]).unwrap();
    let grid = |meta: &matmul_acc::Meta| (cdiv(m as i32, meta.BLOCK_M), cdiv(n as i32, meta.BLOCK_N));
    matmul_acc::launch(grid, &at, &bt, &c, m as i32, n as i32, k as i32, 16, 32, 8).unwrap();
    assert_eq!(c.to_vec(), expected);

    let a16: Vec<f16> = a.iter().map(|&v| f16::from_f32(v)).collect();
    let mut b_t = vec![f16::ZERO; n * k];
    for p in 0..k {
        for j in 0..n {
            b_t[j * k + p] = f16::from_f32(b[p * n + j]);
        }
    }
    let a16 = Tensor::from_vec(&dev, &[m, k], a16).unwrap();
    let b_t = Tensor::from_vec(&dev, &[n, k], b_t).unwrap();
    let c16 = Tensor::<f16>::zeros(&dev, &[m, n]).unwrap();
    let grid = (cdiv(m, 16), cdiv(n, 16));
    matmul_f16::launch(grid, &a16, &b_t, &c16, m as i32, n as i32, k as i32, 16).unwrap();
    let got: Vec<f32> = c16.to_vec().iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, expected);
}
