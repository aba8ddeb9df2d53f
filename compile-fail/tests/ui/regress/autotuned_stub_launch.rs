// Regression (was a macro bug): the error stub of an autotuned kernel takes the tuned meta-parameters as launch arguments (the real `launch` does not), so the correct call in main gets E0061.
use kernel_std::prelude::*;

#[kernel]
#[autotune(configs = [config(BLOCK = 16), config(BLOCK = 32)], key = [n])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
    let v = load(x + offs, offs);
    store(x + offs, v);
}

fn main() {
    let dev = kernel_runtime::Device::cpu();
    let x = kernel_runtime::Tensor::<f32>::zeros(&dev, &[16]).unwrap();
    k::launch(|m: &k::Meta| (kernel_runtime::cdiv(16, m.BLOCK),), &x, 16).unwrap();
}
