//! Adds two random vectors on the default device and checks the result.

use anyhow::Result;
use examples::vector_add::add;
use kernel_runtime::{testing, Device, Tensor};

fn main() -> Result<()> {
    examples::logging::init_logging();
    let dev = Device::best();
    println!("device: {}", dev.describe());
    let n = 98_432;
    let x = Tensor::<f32>::randn(&dev, &[n], 0)?;
    let y = Tensor::<f32>::randn(&dev, &[n], 1)?;
    let out = add(&x, &y)?;
    let want: Vec<f64> = x.to_f64_vec().iter().zip(y.to_f64_vec()).map(|(a, b)| a + b).collect();
    testing::assert_close(&out, &want)?;
    println!("vector add of {n} elements: ✅ matches the float64 reference");
    Ok(())
}
