//! Runs `axpy` on the best device (the first CUDA GPU, else the CPU backend) and checks it
//! against a float64 reference. The GPU code is embedded in this binary: it needs neither
//! `KERNEL_PTX_DIR` nor a `target/ptx` directory.
use kernel_crate::{axpy, axpy_kernel};
use kernel_runtime::{testing, Device, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let embedded = axpy_kernel::INFO.module.embedded;
    let archs: Vec<String> = embedded.iter().map(|m| format!("{} ({} B PTX, {} B cubin)", m.arch, m.ptx.len(), m.cubin.len())).collect();
    println!("embedded device code: {}", if archs.is_empty() { "none".to_string() } else { archs.join(", ") });
    if embedded.is_empty() && std::env::var_os("KERNEL_BUILD_SKIP").is_none() {
        return Err("the build embedded no device code".into());
    }
    let dev = Device::best();
    println!("device: {}", dev.describe());
    let n = 100_003;
    let x = Tensor::<f32>::randn(&dev, &[n], 0)?;
    let y = Tensor::<f32>::randn(&dev, &[n], 1)?;
    let out = axpy(2.5, &x, &y)?;
    let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| 2.5 * a + b).collect();
    testing::assert_close(&out, &want)?;
    println!("axpy of {n} elements on {}: matches the float64 reference", dev.describe());
    Ok(())
}
