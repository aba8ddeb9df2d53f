// pass: a #[kernel_module] with helpers (one calling another, one with a scalar parameter) and an
// optional function meta-parameter `const ACT: Option<Func>` used with `if let Some(f) = ACT`.
use kernel_runtime::{Device, Tensor};
use kernel_std::prelude::*;

#[kernel_module]
pub mod acts {
    #[helper]
    pub fn leaky_relu(x: Block) -> Block {
        where_(x >= 0.0, x, 0.01 * x)
    }

    #[helper]
    pub fn scaled(x: Block<f32>, s: f32) -> Block {
        let y = x * s;
        y + 1.0
    }

    /// Calls another helper.
    #[helper]
    pub fn leaky_twice(x: Block) -> Block {
        scaled(leaky_relu(x), 2.0)
    }

    #[kernel(ACT = [None, Some(leaky_relu), Some(leaky_twice)])]
    pub fn apply<const ACT: Option<Func>>(x_ptr: Ptr<f32>, out_ptr: Ptr<f32>, n: i32) {
        let offs = program_id(0) * 32 + arange(0, 32);
        let mask = offs < n;
        let mut v = load(x_ptr + offs, mask);
        if let Some(f) = ACT {
            v = f(v);
        } else {
            v = -v;
        }
        store(out_ptr + offs, v, mask);
    }
}

fn main() {
    let dev = Device::cpu();
    let xs: Vec<f32> = (0..50).map(|i| (i as f32 - 25.0) * 4.0).collect();
    let x = Tensor::from_vec(&dev, &[50], xs.clone()).unwrap();
    let run = |act| {
        let out = Tensor::<f32>::zeros(&dev, &[50]).unwrap();
        acts::apply::launch((2,), &x, &out, 50, act).unwrap();
        out.to_vec()
    };
    let leaky = |v: f32| if v >= 0.0 { v } else { 0.01 * v };
    assert_eq!(run(None), xs.iter().map(|v| -v).collect::<Vec<_>>());
    assert_eq!(run(Some(acts::leaky_relu)), xs.iter().map(|&v| leaky(v)).collect::<Vec<_>>());
    assert_eq!(run(Some(acts::leaky_twice)), xs.iter().map(|&v| leaky(v) * 2.0 + 1.0).collect::<Vec<_>>());
    // `scaled` is a helper but not a declared value of ACT.
    let out = Tensor::<f32>::zeros(&dev, &[50]).unwrap();
    assert!(acts::apply::launch((2,), &x, &out, 50, Some(acts::scaled)).is_err());
}
