// pass: weak literal typing: `offs * 4` keeps i64 offsets, `x * 0.5` keeps f16, a weak `0.0`
// fills f16 lanes, and meta-parameters mix with i64 scalars.
use kernel_runtime::{Device, Tensor};
use kernel_std::prelude::*;

/// out[i] = x[i * STRIDE] * 0.5 + 1 for the first n lanes (f16 throughout, i64 offsets).
#[kernel(STRIDE = [4])]
fn gather<const STRIDE: i32>(x: Ptr<f16>, out: Ptr<f16>, n: i64, base: i64) {
    let offs = base + arange(0, 32).to::<i64>();
    let src = x + offs * 4;
    let v = load(src, offs < n, 0.0);
    let y = v * 0.5 + 1;
    store(out + offs, y, offs < n);
    // A meta-parameter is weak too: i64 * STRIDE stays i64.
    let same = x + offs * STRIDE;
    store(out + offs + 32, load(same, offs < n, 0.0) - 2, offs < n);
}

fn main() {
    let dev = Device::cpu();
    let n = 20usize;
    let xs: Vec<f16> = (0..4 * n).map(|i| f16::from_f32(i as f32)).collect();
    let x = Tensor::from_vec(&dev, &[4 * n], xs).unwrap();
    let out = Tensor::<f16>::zeros(&dev, &[64]).unwrap();
    gather::launch((1,), &x, &out, n as i64, 0, 4).unwrap();
    let got: Vec<f32> = out.to_vec().iter().map(|v| v.to_f32()).collect();
    for i in 0..32 {
        let (a, b) = if i < n { ((4 * i) as f32 * 0.5 + 1.0, (4 * i) as f32 - 2.0) } else { (0.0, 0.0) };
        assert_eq!(got[i], a, "out[{i}]");
        assert_eq!(got[32 + i], b, "out[{}]", 32 + i);
    }
}
