// pass: `if` on a bool meta-parameter and on runtime scalars, `else if`, and an early `return;`.
use kernel_runtime::{Device, Tensor};
use kernel_std::prelude::*;

#[kernel(EVEN = [true, false], BLOCK = [16])]
fn scale<const EVEN: bool, const BLOCK: i32>(x: Ptr<f32>, out: Ptr<f32>, n: i32, last_block: i32, factor: f32) {
    let pid = program_id(0);
    if pid > last_block {
        // Programs past the data do nothing.
        return;
    }
    let offs = pid * BLOCK + arange(0, BLOCK);
    let mut v = zeros::<f32>([BLOCK]);
    if EVEN {
        v = load(x + offs);
    } else {
        v = load(x + offs, offs < n, 0.0);
    }
    if factor > 1.0 {
        v = v * factor;
    } else if factor < 0.0 {
        v = -v;
    }
    if EVEN {
        store(out + offs, v);
    } else {
        store(out + offs, v, offs < n);
    }
}

fn main() {
    let dev = Device::cpu();
    for (n, even) in [(32usize, true), (27usize, false)] {
        let xs: Vec<f32> = (0..n).map(|i| i as f32 - 10.0).collect();
        let x = Tensor::from_vec(&dev, &[n], xs.clone()).unwrap();
        for factor in [3.0f32, -1.0, 0.5] {
            let out = Tensor::<f32>::zeros(&dev, &[n]).unwrap();
            let blocks = n.div_ceil(16);
            // Launch two extra programs: they return before touching memory.
            scale::launch((blocks + 2,), &x, &out, n as i32, blocks as i32 - 1, factor, even, 16).unwrap();
            let want: Vec<f32> = xs
                .iter()
                .map(|&v| if factor > 1.0 { v * factor } else if factor < 0.0 { -v } else { v })
                .collect();
            assert_eq!(out.to_vec(), want, "n = {n}, factor = {factor}");
        }
    }
}
