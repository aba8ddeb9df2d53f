// math: each function checks its operands' dtypes and count, at the call
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let v = load(x + offs);
    let a = umulhi(v, v);
    let b = isnan(offs);
    let c = fma(v, v);
    let d = tanh(x + offs);
    let e = v.clamp(0.0);
    let f = div_rn(offs, 2);
    let g = abs(offs < n);
    let h = offs.rint();
    let i = round(v, v);
    store(x + offs, a + c + d + e);
}

fn main() {}
