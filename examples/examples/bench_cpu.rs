//! Benchmarks of the CPU backend (release mode): the 512^3 f16 matmul and a vector add.
//! Results go to BENCHMARKS.md by hand, with the command and the machine.

use anyhow::Result;
use examples::{matmul::matmul, vector_add::add};
use kernel_runtime::{f16, testing::do_bench, Device, Tensor};

fn main() -> Result<()> {
    examples::logging::init_logging();
    let dev = Device::cpu();
    println!("device: {}", dev.describe());
    let (m, n, k) = (512, 512, 512);
    let a = Tensor::<f16>::randn(&dev, &[m, k], 0)?;
    let b = Tensor::<f16>::randn(&dev, &[k, n], 1)?;
    let r = do_bench(|| matmul(&a, &b, None).expect("matmul"), 2, 10);
    let gflops = 2.0 * (m * n * k) as f64 / (r.median_ms * 1e-3) / 1e9;
    println!("matmul {m}x{n}x{k} f16: median {:.1} ms (min {:.1}, max {:.1}), {gflops:.2} GFLOP/s", r.median_ms, r.min_ms, r.max_ms);

    let len = 1 << 20;
    let x = Tensor::<f32>::randn(&dev, &[len], 2)?;
    let y = Tensor::<f32>::randn(&dev, &[len], 3)?;
    let r = do_bench(|| add(&x, &y).expect("add"), 3, 20);
    let gbs = 3.0 * 4.0 * len as f64 / (r.median_ms * 1e-3) / 1e9;
    println!("vector add {len} f32: median {:.2} ms (min {:.2}, max {:.2}), {gbs:.2} GB/s", r.median_ms, r.min_ms, r.max_ms);
    Ok(())
}
