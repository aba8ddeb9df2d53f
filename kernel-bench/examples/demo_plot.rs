//! Draws a matmul TFLOPS chart like the Triton tutorial's, from synthetic
//! numbers (no GPU needed), and writes it as CSV, SVG and PNG.
//!
//! ```text
//! cargo run -p kernel-bench --example demo_plot [OUT_DIR]   # default: target/kernel-bench-demo
//! ```

use kernel_bench::{flops_matmul, perf_report, Benchmark, Color, LineStyle, Measurement};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = std::env::args().nth(1).unwrap_or_else(|| "target/kernel-bench-demo".into());
    let bench = Benchmark::new("matmul-performance")
        .x_names(["M", "N", "K"])
        .x_vals((2..33).map(|i| 256 * i))
        .line_arg("provider")
        .line("cublas", "cuBLAS", (Color::GREEN, LineStyle::Solid))
        .line("cublas + relu", "cuBLAS (+ LeakyReLU)", (Color::GREEN, LineStyle::Dashed))
        .line("triton", "Triton", (Color::BLUE, LineStyle::Solid))
        .line("triton + relu", "Triton (+ LeakyReLU)", (Color::BLUE, LineStyle::Dashed))
        .ylabel("TFLOPS")
        .arg("dtype", "f16");

    let report = perf_report(&bench, |p| {
        let (m, n, k) = (p.x_usize("M")?, p.x_usize("N")?, p.x_usize("K")?);
        if p.provider() == "triton + relu" && m == 3072 {
            return Err("synthetic failure: out of shared memory".into());
        }
        // A roofline-ish curve: peak throughput approached as the size grows,
        // with a deterministic wiggle standing in for measurement noise.
        let (peak, relu_cost) = match p.provider() {
            "cublas" => (280.0, 0.0),
            "cublas + relu" => (280.0, 0.12),
            "triton" => (255.0, 0.0),
            _ => (255.0, 0.02),
        };
        let size = m as f64 / 1024.0;
        let wiggle = 1.0 + 0.04 * (m as f64 / 300.0 + peak).sin();
        let tflops = peak * size * size / (size * size + 0.6) * (1.0 - relu_cost) * wiggle;
        let ms = 2.0 * (m * n * k) as f64 * 1e-12 / tflops * 1e3;
        Ok::<_, Box<dyn std::error::Error>>(Measurement::from_ms(ms, ms * 0.97, ms * 1.08, |ms| {
            flops_matmul(m, n, k, ms)
        }))
    })?;

    print!("{}", report.to_table());
    let ratio = report.geomean_ratio("triton", "cublas", 2048..=8192)?;
    println!("\nTriton / cuBLAS, geometric mean over M = 2048..8192: {ratio:.3}");
    let files = report.save(&out_dir)?;
    println!("wrote {}, {} and {}", files.csv.display(), files.svg.display(), files.png.display());
    Ok(())
}
