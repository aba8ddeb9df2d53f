//! Runs the seeds' matmul on the default device (GPU when usable, else CPU) and checks the
//! result against a float64 reference, like the tutorial's unit test.

use anyhow::Result;
use examples::matmul::{leaky_relu, matmul};
use kernel_runtime::{f16, testing, Device, Tensor};
use std::time::Instant;

/// `matmul [--size M N K]` (default 512 512 512).
fn size() -> Result<(usize, usize, usize)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok((512, 512, 512)),
        [flag, m, n, k] if flag == "--size" => Ok((m.parse()?, n.parse()?, k.parse()?)),
        _ => anyhow::bail!("usage: matmul [--size M N K]"),
    }
}

fn main() -> Result<()> {
    examples::logging::init_logging();
    let dev = Device::best();
    println!("device: {}", dev.describe());
    let (m, n, k) = size()?;
    let a = Tensor::<f16>::randn(&dev, &[m, k], 0)?;
    let b = Tensor::<f16>::randn(&dev, &[k, n], 1)?;
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let reference = testing::matmul_ref_f64(&av, &bv, m, n, k);

    for (name, act, f) in [
        ("none", None, (|x: f64| x) as fn(f64) -> f64),
        ("leaky_relu", Some(leaky_relu), |x: f64| if x >= 0.0 { x } else { 0.01 * x }),
    ] {
        let t = Instant::now();
        let c = matmul(&a, &b, act)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let got = c.to_vec();
        let want: Vec<f64> = reference.iter().map(|x| f(*x)).collect();
        println!("matmul {m}x{k} @ {k}x{n} (f16, f32 accumulation), activation {name}: {ms:.1} ms");
        println!("  ours:      [{:.4}, {:.4}, {:.4}, ...]", got[0].to_f32(), got[1].to_f32(), got[2].to_f32());
        println!("  reference: [{:.4}, {:.4}, {:.4}, ...]", want[0], want[1], want[2]);
        match testing::assert_close(&c, &want) {
            Ok(()) => println!("  ✅ matches the float64 reference (f16 tolerances)"),
            Err(e) => {
                println!("  ❌ differs from the float64 reference: {e}");
                std::process::exit(1);
            }
        }
    }
    Ok(())
}
