// errors: a kernel with a body error still has its launch API, so the call in main type-checks
use kernel_std::prelude::*;

#[kernel(BLOCK = [16])]
fn k<const BLOCK: i32>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, BLOCK);
    let v = load(x + offs, offs);
    store(x + offs, v);
}

fn main() {
    let dev = kernel_runtime::Device::cpu();
    let x = kernel_runtime::Tensor::<f32>::zeros(&dev, &[16]).unwrap();
    k::launch((1,), &x, 16, 16).unwrap();
}
