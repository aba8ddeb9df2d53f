// triton: `x.to(tl.float16)` is `x.to::<f16>()`
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, out: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs).to(tl.float16);
    store(out + offs, v.to::<f32>());
}

fn main() {}
