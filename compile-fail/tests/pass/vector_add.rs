// pass: the vector add of the tutorials (masked tail), launched on the CPU for every declared BLOCK_SIZE.
use kernel_runtime::{cdiv, Device, Tensor};
use kernel_std::prelude::*;

#[kernel(BLOCK_SIZE = [64, 256])]
fn add_kernel<const BLOCK_SIZE: i32>(x_ptr: Ptr<f32>, y_ptr: Ptr<f32>, output_ptr: Ptr<f32>, n_elements: i32) {
    let pid = program_id(0);
    let offsets = pid * BLOCK_SIZE + arange(0, BLOCK_SIZE);
    let mask = offsets < n_elements;
    let x = load(x_ptr + offsets, mask);
    let y = load(y_ptr + offsets, mask);
    store(output_ptr + offsets, x + y, mask);
}

fn main() {
    let dev = Device::cpu();
    let n = 1000usize;
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let ys: Vec<f32> = (0..n).map(|i| 0.5 - 2.0 * i as f32).collect();
    let expected: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + b).collect();
    let x = Tensor::from_vec(&dev, &[n], xs).unwrap();
    let y = Tensor::from_vec(&dev, &[n], ys).unwrap();
    for block in [64, 256] {
        let out = Tensor::<f32>::zeros(&dev, &[n]).unwrap();
        let grid = |m: &add_kernel::Meta| (cdiv(n as i32, m.BLOCK_SIZE),);
        add_kernel::launch(grid, &x, &y, &out, n as i32, block).unwrap();
        assert_eq!(out.to_vec(), expected, "BLOCK_SIZE = {block}");
    }
    // 128 is not a declared instance.
    let out = Tensor::<f32>::zeros(&dev, &[n]).unwrap();
    assert!(add_kernel::launch((8,), &x, &y, &out, n as i32, 128).is_err());
}
