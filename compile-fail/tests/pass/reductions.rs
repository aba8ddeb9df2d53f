// pass: reductions along both axes, where_, casts (`.to::<T>()` and `as`) and f32::NEG_INFINITY.
use kernel_runtime::{Device, Tensor};
use kernel_std::prelude::*;

/// Row-wise softmax of a [rows, cols] matrix, one program per row.
#[kernel(BLOCK = [16])]
fn softmax<const BLOCK: i32>(x_ptr: Ptr<f32>, y_ptr: Ptr<f32>, cols: i32) {
    let row = program_id(0);
    let offs = arange(0, BLOCK);
    let mask = offs < cols;
    let x = load(x_ptr + row * cols + offs, mask, f32::NEG_INFINITY);
    let z = x - x.max(0);
    let num = exp(z);
    store(y_ptr + row * cols + offs, num / sum(num, 0), mask);
}

/// Column sums (axis 0), row maxima (axis 1) and the count of positive entries (a mask cast
/// to i32) of one [8, 16] tile; negatives are clamped to zero with where_ before the sums.
#[kernel]
fn stats(x_ptr: Ptr<f16>, col_sum: Ptr<f32>, row_max: Ptr<f16>, positives: Ptr<i32>, row_min: Ptr<f32>) {
    let r = arange(0, 8);
    let c = arange(0, 16);
    let x = load(x_ptr + r.as_col() * 16 + c.as_row());
    let clamped = where_(x > 0.0, x, 0.0);
    store(col_sum + c, clamped.to::<f32>().sum(0));
    store(row_max + r, x.max(1));
    store(row_min + r, x.min(1) as f32);
    let count = (x > 0.0).to::<i32>().sum(1).sum(0);
    store(positives, count);
}

fn main() {
    let dev = Device::cpu();
    let (rows, cols) = (3usize, 11usize);
    let xs: Vec<f32> = (0..rows * cols).map(|i| ((i * 5) % 9) as f32 * 0.25 - 1.0).collect();
    let x = Tensor::from_vec(&dev, &[rows, cols], xs.clone()).unwrap();
    let y = Tensor::<f32>::zeros(&dev, &[rows, cols]).unwrap();
    softmax::launch((rows,), &x, &y, cols as i32, 16).unwrap();
    let got = y.to_vec();
    for r in 0..rows {
        let row = &xs[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let s: f32 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..cols {
            let want = (row[c] - m).exp() / s;
            assert!((got[r * cols + c] - want).abs() < 1e-5, "softmax[{r}, {c}] = {} != {want}", got[r * cols + c]);
        }
        let total: f32 = got[r * cols..(r + 1) * cols].iter().sum();
        assert!((total - 1.0).abs() < 1e-5);
    }

    let vals: Vec<f32> = (0..128).map(|i| ((i * 11) % 13) as f32 - 6.0).collect();
    let xh = Tensor::from_vec(&dev, &[8, 16], vals.iter().map(|&v| f16::from_f32(v)).collect()).unwrap();
    let col_sum = Tensor::<f32>::zeros(&dev, &[16]).unwrap();
    let row_max = Tensor::<f16>::zeros(&dev, &[8]).unwrap();
    let positives = Tensor::<i32>::zeros(&dev, &[1]).unwrap();
    let row_min = Tensor::<f32>::zeros(&dev, &[8]).unwrap();
    stats::launch((1,), &xh, &col_sum, &row_max, &positives, &row_min).unwrap();
    for c in 0..16 {
        let want: f32 = (0..8).map(|r| vals[r * 16 + c].max(0.0)).sum();
        assert_eq!(col_sum.to_vec()[c], want);
    }
    for r in 0..8 {
        let row = &vals[r * 16..(r + 1) * 16];
        assert_eq!(row_max.to_vec()[r].to_f32(), row.iter().cloned().fold(f32::MIN, f32::max));
        assert_eq!(row_min.to_vec()[r], row.iter().cloned().fold(f32::MAX, f32::min));
    }
    assert_eq!(positives.to_vec()[0], vals.iter().filter(|&&v| v > 0.0).count() as i32);
}
