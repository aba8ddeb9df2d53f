//! Times Triton's matmul tutorial kernel (written by hand against the CPU
//! backend) on a 512x512x512 f16 problem with 64x64x32 blocks.
//!
//! `cargo run --release -p kernel-runtime --example cpu_matmul`

#[path = "../tests/support/matmul_kernel.rs"]
mod matmul_kernel;

use kernel_runtime::testing::{assert_close, do_bench, matmul_ref_f64};
use kernel_runtime::{f16, Device, Tensor};
use matmul_kernel::{matmul, Meta};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::cpu(); // the hand-written kernel calls `launch_cpu` directly
    let (m, n, k) = (512, 512, 512);
    let a = Tensor::<f16>::randn(&dev, &[m, k], 0)?;
    let b = Tensor::<f16>::randn(&dev, &[k, n], 1)?;
    let meta = Meta { block_m: 64, block_n: 64, block_k: 32, group_m: 8, leaky_relu: false };
    let c = matmul(&a, &b, meta, true)?;
    assert_close(&c, &matmul_ref_f64(&a.to_f64_vec(), &b.to_f64_vec(), m, n, k))?;
    let r = do_bench(|| matmul(&a, &b, meta, true), 1, 5);
    println!(
        "{m}x{n}x{k} f16 matmul on {}: median {:.1} ms (min {:.1}, max {:.1}), {:.3} TFLOP/s",
        dev.describe(),
        r.median_ms,
        r.min_ms,
        r.max_ms,
        r.tflops(2.0 * (m * n * k) as f64)
    );
    Ok(())
}
