// pass: an expression of 250 terms, just under the nesting limit of 256 levels, compiles
// (macro, CPU and device code) and runs.
use kernel_runtime::{Device, Tensor};
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    let y = v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v + v;
    store(out + offs, y);
}

fn main() {
    let dev = Device::cpu();
    let xs: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let x = Tensor::from_vec(&dev, &[16], xs.clone()).unwrap();
    let out = Tensor::<f32>::zeros(&dev, &[16]).unwrap();
    k::launch((1,), &x, &out).unwrap();
    assert_eq!(out.to_vec(), xs.iter().map(|v| v * 250.0).collect::<Vec<_>>());
}
