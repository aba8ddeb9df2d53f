//! Project tasks, run as `cargo xtask <command>` (or `./x <command>` on a fresh machine,
//! which first installs the pinned toolchain).

use anyhow::{bail, Context, Result};
use std::process::Command;

const HELP: &str = "\
cargo xtask <command>

commands:
  matmul       run the matmul example (GPU when one is usable, else the CPU backend)
  test         run the whole test suite (unit, integration, compile-fail)
  bench-cpu    benchmark the CPU backend (matmul 512^3 f16, vector add) in release mode
  help         print this text
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        print!("{HELP}");
        return Ok(());
    };
    let rest = &args[1..];
    match cmd.as_str() {
        "matmul" => cargo(&["run", "--release", "--quiet", "-p", "examples", "--bin", "matmul", "--"], rest),
        "test" => cargo(&["test", "--workspace"], rest),
        "bench-cpu" => cargo(&["run", "--release", "--quiet", "-p", "examples", "--bin", "bench_cpu", "--"], rest),
        "help" | "--help" | "-h" => {
            print!("{HELP}");
            Ok(())
        }
        other => bail!("unknown command `{other}`\n\n{HELP}"),
    }
}

fn cargo(args: &[&str], extra: &[String]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args(args)
        .args(extra)
        .status()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
