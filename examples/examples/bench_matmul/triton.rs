//! Triton's own matmul kernels in this process: the cubins that
//! `scripts/triton_matmul_bench.py --export-kernels DIR` wrote (for each shape and activation,
//! the config Triton's autotuner chose on this GPU), loaded with
//! [`kernel_runtime::foreign::ForeignKernel`] and launched on the device's stream, so that
//! they are timed with the same loop, interleaved with ours and against the same cuBLAS.
//!
//! `DIR/index.json` describes each kernel: entry name, threads, shared memory, grid, and its
//! parameters in order, each with the name of the tutorial kernel's argument it holds and,
//! for integers, the value Triton specialized the kernel for (it may assume, say, that a
//! stride divides by 16). A kernel is used only with tensors whose values are the same.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use kernel_runtime::foreign::{ForeignArg, ForeignKernel, ForeignParam};
use kernel_runtime::{f16, Device, Tensor};
use serde_json::Value;

/// One exported kernel's description.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub shape: (usize, usize, usize),
    /// `none` or `leaky_relu`.
    pub activation: String,
    pub cubin: PathBuf,
    pub name: String,
    pub threads: u32,
    pub shared: u32,
    pub grid: [u32; 3],
    /// (argument name, Triton type such as `*fp16` or `i32`, specialized value of an integer).
    pub params: Vec<(String, String, Option<i64>)>,
    /// Triton's description of the config.
    pub config: String,
}

/// The kernels of one export directory.
#[derive(Debug)]
pub struct TritonKernels {
    pub triton_version: String,
    pub kernels: Vec<Exported>,
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value> {
    v.get(name).with_context(|| format!("missing `{name}`"))
}

fn uint(v: &Value, name: &str) -> Result<u64> {
    field(v, name)?.as_u64().with_context(|| format!("`{name}` is not a non-negative integer"))
}

fn text(v: &Value, name: &str) -> Result<String> {
    Ok(field(v, name)?.as_str().with_context(|| format!("`{name}` is not a string"))?.to_string())
}

/// Parses `index.json` of an export directory `dir`.
pub fn parse_index(json: &str, dir: &Path) -> Result<TritonKernels> {
    let root: Value = serde_json::from_str(json).context("index.json is not valid JSON")?;
    let list = field(&root, "kernels")?.as_array().context("`kernels` is not a list")?;
    let mut kernels = Vec::with_capacity(list.len());
    for (i, k) in list.iter().enumerate() {
        let parse = || -> Result<Exported> {
            let dim = |n: &str| -> Result<usize> { Ok(usize::try_from(uint(k, n)?)?) };
            let grid = field(k, "grid")?.as_array().context("`grid` is not a list")?;
            ensure!((1..=3).contains(&grid.len()), "`grid` has {} dimensions", grid.len());
            let mut g = [1u32; 3];
            for (d, v) in grid.iter().enumerate() {
                g[d] = u32::try_from(v.as_u64().context("a grid dimension is not an integer")?)?;
            }
            let params = field(k, "params")?
                .as_array()
                .context("`params` is not a list")?
                .iter()
                .map(|p| -> Result<(String, String, Option<i64>)> { Ok((text(p, "name")?, text(p, "type")?, p.get("value").and_then(Value::as_i64))) })
                .collect::<Result<Vec<_>>>()?;
            Ok(Exported {
                shape: (dim("M")?, dim("N")?, dim("K")?),
                activation: text(k, "activation")?,
                cubin: dir.join(text(k, "cubin")?),
                name: text(k, "name")?,
                threads: u32::try_from(uint(k, "threads")?)?,
                shared: u32::try_from(uint(k, "shared")?)?,
                grid: g,
                params,
                config: k.get("config").and_then(Value::as_str).unwrap_or("").to_string(),
            })
        };
        kernels.push(parse().with_context(|| format!("index.json: kernel {i}"))?);
    }
    Ok(TritonKernels { triton_version: root.get("triton").and_then(Value::as_str).unwrap_or("?").to_string(), kernels })
}

impl TritonKernels {
    /// The kernels exported to `dir`.
    pub fn open(dir: &Path) -> Result<TritonKernels> {
        let path = dir.join("index.json");
        let json = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        parse_index(&json, dir).with_context(|| format!("in {}", path.display()))
    }

    /// The kernel exported for `shape` with `activation`, if any.
    pub fn find(&self, shape: (usize, usize, usize), activation: &str) -> Option<&Exported> {
        self.kernels.iter().find(|k| k.shape == shape && k.activation == activation)
    }
}

/// The launch arguments of `e` for `c = a @ b`, checked against what the kernel was
/// specialized for.
pub fn arguments(e: &Exported, a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) -> Result<(Vec<ForeignParam>, Vec<ForeignArg>)> {
    let (m, k) = (a.shape()[0], a.shape()[1]);
    let n = b.shape()[1];
    ensure!((m, n, k) == e.shape, "the kernel was exported for {:?}, the tensors are {m}x{n}x{k}", e.shape);
    let mut params = Vec::with_capacity(e.params.len());
    let mut args = Vec::with_capacity(e.params.len());
    for (name, ty, value) in &e.params {
        let int = match name.as_str() {
            "M" => Some(m),
            "N" => Some(n),
            "K" => Some(k),
            "stride_am" => Some(a.stride(0)),
            "stride_ak" => Some(a.stride(1)),
            "stride_bk" => Some(b.stride(0)),
            "stride_bn" => Some(b.stride(1)),
            "stride_cm" => Some(c.stride(0)),
            "stride_cn" => Some(c.stride(1)),
            _ => None,
        };
        // Pointers are filled in after every integer is checked.
        let (p, arg) = match (name.as_str(), ty.as_str(), int) {
            ("a_ptr" | "b_ptr" | "c_ptr", "*fp16", _) | ("scratch", _, _) => (ForeignParam::Ptr, ForeignArg::Null),
            (_, "i32" | "i64", Some(v)) => {
                let v = i64::try_from(v)?;
                ensure!(*value == Some(v), "parameter `{name}` is {v} here, the kernel was specialized for {value:?}");
                if ty == "i32" {
                    (ForeignParam::I32, ForeignArg::I32(i32::try_from(v)?))
                } else {
                    (ForeignParam::I64, ForeignArg::I64(v))
                }
            }
            _ => bail!("parameter `{name}` of type {ty} is not one of the tutorial kernel's"),
        };
        params.push(p);
        args.push(arg);
    }
    // Whatever Triton specialized away must hold too: the tutorial kernel drops integer
    // arguments equal to 1 (unit strides, of whichever axis is contiguous) from its entry.
    let strides = [("stride_am", a.stride(0)), ("stride_ak", a.stride(1)), ("stride_bk", b.stride(0)), ("stride_bn", b.stride(1)), ("stride_cm", c.stride(0)), ("stride_cn", c.stride(1))];
    for (name, v) in strides {
        if !e.params.iter().any(|(p, _, _)| p == name) {
            ensure!(v == 1, "`{name}` is {v} here; the kernel was compiled for a unit stride");
        }
    }
    for ((name, _, _), arg) in e.params.iter().zip(&mut args) {
        match name.as_str() {
            "a_ptr" => *arg = ForeignArg::tensor(a)?,
            "b_ptr" => *arg = ForeignArg::tensor(b)?,
            "c_ptr" => *arg = ForeignArg::tensor(c)?,
            _ => {}
        }
    }
    Ok((params, args))
}

/// An exported kernel loaded for one point's tensors.
pub struct Loaded {
    kernel: ForeignKernel,
    args: Vec<ForeignArg>,
    grid: [u32; 3],
    pub config: String,
}

impl Loaded {
    /// Loads `e` on `dev` for `c = a @ b`.
    pub fn new(dev: &Device, e: &Exported, a: &Tensor<f16>, b: &Tensor<f16>, c: &Tensor<f16>) -> Result<Loaded> {
        let (params, args) = arguments(e, a, b, c)?;
        let image = std::fs::read(&e.cubin).with_context(|| format!("reading {}", e.cubin.display()))?;
        let kernel = ForeignKernel::load(dev, &image, &e.name, &params, e.threads, e.shared)?;
        Ok(Loaded { kernel, args, grid: e.grid, config: e.config.clone() })
    }

    /// One launch, queued on the device's stream.
    pub fn call(&self) -> Result<()> {
        // SAFETY: the arguments are the tensors of the shape the kernel was compiled and
        // specialized for (checked in `arguments`): the tutorial kernel reads rows of a and
        // columns of b wrapped modulo M and N, masks K, and stores inside c's M x N. The
        // tensors belong to the benchmark point, which outlives every launch and synchronizes
        // before it frees them.
        unsafe { self.kernel.launch(self.grid, &self.args) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = r#"{"triton": "3.6.0", "device": "NVIDIA H100 80GB HBM3", "kernels": [
      {"M": 64, "N": 32, "K": 48, "activation": "none", "cubin": "64x32x48-none.cubin", "name": "matmul_kernel",
       "threads": 256, "shared": 98304, "grid": [2],
       "params": [{"name": "a_ptr", "type": "*fp16", "ptx": "u64", "value": null},
                  {"name": "b_ptr", "type": "*fp16", "ptx": "u64", "value": null},
                  {"name": "c_ptr", "type": "*fp16", "ptx": "u64", "value": null},
                  {"name": "M", "type": "i32", "ptx": "u32", "value": 64},
                  {"name": "N", "type": "i32", "ptx": "u32", "value": 32},
                  {"name": "K", "type": "i32", "ptx": "u32", "value": 48},
                  {"name": "stride_am", "type": "i32", "ptx": "u32", "value": 48},
                  {"name": "stride_bk", "type": "i32", "ptx": "u32", "value": 32},
                  {"name": "stride_cm", "type": "i32", "ptx": "u32", "value": 32},
                  {"name": "scratch", "type": "*i8", "ptx": "u64", "value": null}],
       "config": "BLOCK_SIZE_M: 32, ..."}]}"#;

    #[test]
    fn the_index_is_read_and_arguments_follow_the_entry() {
        let ks = parse_index(INDEX, Path::new("/x")).unwrap();
        assert_eq!(ks.triton_version, "3.6.0");
        let e = ks.find((64, 32, 48), "none").unwrap();
        assert_eq!((e.threads, e.shared, e.grid), (256, 98304, [2, 1, 1]));
        assert_eq!(e.cubin, Path::new("/x/64x32x48-none.cubin"));
        assert!(ks.find((64, 32, 48), "leaky_relu").is_none());
        // The CPU has no device addresses: arguments need GPU tensors.
        let dev = Device::cpu();
        let a = Tensor::<f16>::zeros(&dev, &[64, 48]).unwrap();
        let b = Tensor::<f16>::zeros(&dev, &[48, 32]).unwrap();
        let c = Tensor::<f16>::zeros(&dev, &[64, 32]).unwrap();
        let err = arguments(e, &a, &b, &c).unwrap_err();
        assert!(format!("{err:#}").contains("CUDA device"), "{err:#}");
        // Another shape, or a stride the kernel was not specialized for, is refused first.
        let a2 = Tensor::<f16>::zeros(&dev, &[64, 40]).unwrap();
        let b2 = Tensor::<f16>::zeros(&dev, &[40, 32]).unwrap();
        assert!(format!("{:#}", arguments(e, &a2, &b2, &c).unwrap_err()).contains("exported for (64, 32, 48)"));
        let wide = Tensor::<f16>::zeros(&dev, &[64, 64]).unwrap();
        let c_view = wide.narrow(1, 0, 32).unwrap();
        let err = arguments(e, &a, &b, &c_view).unwrap_err();
        assert!(format!("{err:#}").contains("`stride_cm` is 64 here, the kernel was specialized for Some(32)"), "{err:#}");
    }

    #[test]
    fn malformed_indexes_say_what_is_wrong() {
        let err = parse_index("{\"kernels\": [{\"M\": 1}]}", Path::new(".")).unwrap_err();
        assert!(format!("{err:#}").contains("kernel 0: missing `grid`"), "{err:#}");
        assert!(parse_index("not json", Path::new(".")).is_err());
    }
}
