//! GPU tests of the CUDA backend: tensor upload/download round trips of every
//! dtype, launches of a hand-written PTX kernel through `__private::launch`,
//! and the errors for missing, broken or stale PTX and for too much shared
//! memory.
//!
//! They need a GPU and run only with `KERNEL_TEST_DEVICE=cuda` (the variable that runs the
//! integration tests of the `tests` crate on the GPU); otherwise each prints a note on stderr
//! and returns.
//!
//! `KERNEL_TEST_DEVICE=cuda cargo test -p kernel-runtime --test cuda -- --test-threads=1`
//!
//! Built only with the `cuda` feature (default).
#![cfg(feature = "cuda")]

use std::io::Write;
use std::path::{Path, PathBuf};

use kernel_runtime::__private::{
    launch, ptr_arg, InstanceInfo, KernelInfo, ModuleInfo, ParamInfo, ParamKind, ScalarArg,
};
use kernel_runtime::{bf16, cdiv, f16, DType, DTypeKind, Device, DeviceError, LaunchError, Tensor};

/// The GPU, or `None` (after a note on stderr) unless `KERNEL_TEST_DEVICE=cuda`.
fn gpu(test: &str) -> Option<Device> {
    if std::env::var_os("KERNEL_TEST_DEVICE").is_none_or(|v| v != "cuda") {
        // Written to stderr directly, so the note shows through the test harness's capture.
        let _ = writeln!(std::io::stderr(), "note: {test} skipped: set KERNEL_TEST_DEVICE=cuda to run it on a GPU");
        return None;
    }
    match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => panic!("KERNEL_TEST_DEVICE=cuda but cuda:0 cannot be used: {e}"),
    }
}

/// Like [`gpu`], also skipping tests that place their own PTX when
/// `KERNEL_PTX_DIR` overrides the search.
fn gpu_for_ptx(test: &str) -> Option<Device> {
    let dev = gpu(test)?;
    if std::env::var_os("KERNEL_PTX_DIR").is_some() {
        let _ = writeln!(std::io::stderr(), "note: {test} skipped: unset KERNEL_PTX_DIR to run it");
        return None;
    }
    Some(dev)
}

fn round_trip<T: DType + std::fmt::Debug>(dev: &Device, make: impl Fn(usize) -> T) {
    let cpu = Device::cpu();
    let data: Vec<T> = (0..24).map(&make).collect();
    let g = Tensor::from_vec(dev, &[2, 3, 4], data.clone()).unwrap();
    let c = Tensor::from_vec(&cpu, &[2, 3, 4], data.clone()).unwrap();
    assert_eq!(g.device(), dev);
    assert_eq!(g.try_to_vec().unwrap(), data, "{}: upload/download", T::KIND);
    // Views share storage and read like the CPU's.
    let views = |t: &Tensor<T>| {
        vec![
            t.transpose(0, 2).unwrap().to_vec(),
            t.narrow(1, 1, 2).unwrap().to_vec(),
            t.narrow(2, 3, 1).unwrap().t().to_vec(),
            t.narrow(0, 1, 1).unwrap().narrow(2, 1, 0).unwrap().to_vec(),
        ]
    };
    assert_eq!(views(&g), views(&c), "{}: views", T::KIND);
    // Fill through a strided view and through a contiguous one.
    for t in [&g, &c] {
        t.narrow(2, 1, 2).unwrap().try_fill(make(99)).unwrap();
        t.narrow(0, 1, 1).unwrap().try_fill(make(7)).unwrap();
    }
    assert_eq!(g.to_vec(), c.to_vec(), "{}: fill", T::KIND);
    let tc = g.t().try_contiguous().unwrap();
    assert!(tc.is_contiguous() && tc.device() == dev);
    assert_eq!(tc.to_vec(), c.t().contiguous().to_vec(), "{}: contiguous", T::KIND);
    // Across devices, both ways, from a strided view.
    let back = g.narrow(1, 1, 2).unwrap().to_device(&cpu).unwrap();
    assert!(back.device().is_cpu());
    assert_eq!(back.to_vec(), c.narrow(1, 1, 2).unwrap().to_vec());
    let up = c.t().to_device(dev).unwrap();
    assert_eq!(up.to_vec(), c.t().to_vec());
    assert_eq!(g.to_device(dev).unwrap().to_vec(), g.to_vec(), "same device: a view");
    // Constructors.
    assert_eq!(Tensor::<T>::zeros(dev, &[5]).unwrap().to_vec(), vec![T::default(); 5]);
    assert_eq!(Tensor::full(dev, &[3], make(5)).unwrap().to_vec(), vec![make(5); 3]);
    assert_eq!(
        Tensor::<T>::randn(dev, &[100], 9).unwrap().to_vec(),
        Tensor::<T>::randn(&cpu, &[100], 9).unwrap().to_vec(),
        "{}: one seed, one tensor on every device",
        T::KIND
    );
    assert_eq!(
        Tensor::<T>::rand_uniform(dev, &[100], -3.0, 3.0, 2).unwrap().to_f64_vec(),
        Tensor::<T>::rand_uniform(&cpu, &[100], -3.0, 3.0, 2).unwrap().to_f64_vec()
    );
    // Empty and rank-0 tensors.
    let e = Tensor::<T>::zeros(dev, &[0, 3]).unwrap();
    assert!(e.to_vec().is_empty());
    e.fill(make(1));
    assert_eq!(Tensor::from_vec(dev, &[], vec![make(3)]).unwrap().to_vec(), vec![make(3)]);
    assert!(g.cuda_slice().is_some_and(|s| s.len() >= 24));
}

#[test]
fn round_trips_of_every_dtype() {
    let Some(dev) = gpu("round_trips_of_every_dtype") else { return };
    round_trip(&dev, |i| f16::from_f32(i as f32 * 0.5 - 3.0));
    round_trip(&dev, |i| bf16::from_f32(i as f32 * -0.25));
    round_trip(&dev, |i| i as f32 / 3.0);
    round_trip(&dev, |i| i as f64 * 1e-3);
    round_trip(&dev, |i| i as i32 - 12);
    round_trip(&dev, |i| u32::MAX - i as u32);
    round_trip(&dev, |i| (i as i64) << 40);
    dev.synchronize().unwrap();
}

#[test]
fn device_properties() {
    let Some(dev) = gpu("device_properties") else { return };
    assert_eq!(Device::best(), dev);
    assert_eq!(Device::cuda(0).unwrap(), dev, "one shared device per ordinal");
    assert_eq!(dev.to_string(), "cuda:0");
    let d = dev.describe();
    assert!(d.starts_with("CUDA device 0: ") && d.contains(" SMs)"), "{d}");
    println!("{d}");
    assert!(dev.compute_capability().is_some_and(|cc| cc >= (8, 0)));
    assert!(dev.cuda_stream().is_some());
    let n = Device::cuda_count().unwrap();
    assert!(matches!(Device::cuda(n), Err(DeviceError::NoSuchDevice { count, .. }) if count == n));
}

/// A hand-written kernel: `out[i] = alpha * x[i] + y[i]` for `i < n`, one
/// element per thread; parameters interleave pointers and scalars.
const PTX: &str = r#"
.version 8.0
.target sm_80
.address_size 64

.visible .entry axpy(
    .param .u64 x,
    .param .u32 n,
    .param .u64 y,
    .param .f32 alpha,
    .param .u64 out
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<10>;
    .reg .f32 %f<5>;
    ld.param.u64 %rd1, [x];
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd2, [y];
    ld.param.f32 %f4, [alpha];
    ld.param.u64 %rd3, [out];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.s32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    ld.global.f32 %f1, [%rd8];
    add.s64 %rd8, %rd5, %rd7;
    ld.global.f32 %f2, [%rd8];
    fma.rn.f32 %f3, %f4, %f1, %f2;
    add.s64 %rd9, %rd6, %rd7;
    st.global.f32 [%rd9], %f3;
DONE:
    ret;
}
"#;

/// A fresh directory standing for a crate's manifest directory.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-runtime-cuda-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `ptx` as `<dir>/target/ptx/<arch>/<crate_name>.ptx` for every architecture.
fn place_ptx(dir: &Path, crate_name: &str, ptx: &str) {
    for arch in ["sm_90a", "sm_90", "sm_80"] {
        let d = dir.join("target/ptx").join(arch);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("{crate_name}.ptx")), ptx).unwrap();
    }
}

fn leak<T>(v: T) -> &'static T {
    Box::leak(Box::new(v))
}

const AXPY_PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "x", kind: ParamKind::Ptr(DTypeKind::F32) },
    ParamInfo { name: "n", kind: ParamKind::Scalar(DTypeKind::I32) },
    ParamInfo { name: "y", kind: ParamKind::Ptr(DTypeKind::F32) },
    ParamInfo { name: "alpha", kind: ParamKind::Scalar(DTypeKind::F32) },
    ParamInfo { name: "out", kind: ParamKind::Ptr(DTypeKind::F32) },
];

/// A kernel description named `crate_name` in `dir`, with one instance per `(entry, shared_bytes)`.
fn axpy_info(crate_name: &'static str, dir: &Path, instances: &[(&'static str, u32)]) -> &'static KernelInfo {
    let instances: Vec<InstanceInfo> = instances
        .iter()
        .map(|&(entry, shared_bytes)| InstanceInfo {
            entry,
            config: 0,
            variant: 0,
            launch_metas: &[],
            threads: 128,
            shared_bytes,
            tma: &[],
            split_bytes: 0,
            hidden: &[],
            split_hidden: &[],
        })
        .collect();
    leak(KernelInfo {
        name: "axpy",
        params: AXPY_PARAMS,
        configs: &[],
        key: &[],
        instances: Box::leak(instances.into_boxed_slice()),
        module: ModuleInfo {
            crate_name,
            manifest_dir: Box::leak(dir.to_string_lossy().into_owned().into_boxed_str()),
            embedded: &[],
        },
        asserts: &[],
    })
}

/// Runs instance `instance` of `info` on x, y, out (views with storage offsets).
fn run_axpy(info: &'static KernelInfo, instance: usize, dev: &Device, n: usize) -> Result<Vec<f32>, LaunchError> {
    let xs = Tensor::from_vec(dev, &[n + 3], (0..n + 3).map(|i| i as f32).collect()).unwrap();
    let x = xs.narrow(0, 3, n).unwrap(); // x[i] = i + 3
    let y = Tensor::full(dev, &[n], 0.25f32).unwrap();
    let outs = Tensor::<f32>::zeros(dev, &[n + 5]).unwrap();
    let out = outs.narrow(0, 5, n).unwrap();
    let args = [ptr_arg("x", &x), ptr_arg("y", &y), ptr_arg("out", &out)];
    let scalars = [ScalarArg::I32(n as i32), ScalarArg::F32(2.0)];
    let grid = [cdiv(n as u32, 128), 1, 1];
    launch(info, instance, &args, grid, &scalars, &|_| unreachable!("runs on the GPU"))?;
    dev.synchronize()?;
    let all = outs.to_vec();
    assert!(all[..5].iter().all(|&v| v == 0.0), "nothing written before the view");
    Ok(all[5..].to_vec())
}

#[test]
fn hand_written_ptx_runs_through_launch() {
    let Some(dev) = gpu_for_ptx("hand_written_ptx_runs_through_launch") else { return };
    let dir = scratch_dir("axpy");
    place_ptx(&dir, "kr_cuda_test_axpy", PTX);
    // Instance 1 asks for 100 KiB of dynamic shared memory: above 48 KiB, so the
    // launch must opt in (the kernel does not use it).
    let info = axpy_info("kr_cuda_test_axpy", &dir, &[("axpy", 0), ("axpy", 100 * 1024)]);
    let n = 1000;
    let expected: Vec<f32> = (0..n).map(|i| 2.0 * (i + 3) as f32 + 0.25).collect();
    assert_eq!(run_axpy(info, 0, &dev, n).unwrap(), expected);
    assert_eq!(run_axpy(info, 0, &dev, n).unwrap(), expected, "second launch: cached module");
    assert_eq!(run_axpy(info, 1, &dev, n).unwrap(), expected, "opt-in shared memory");
    // A zero-sized grid launches nothing.
    let t = Tensor::<f32>::zeros(&dev, &[4]).unwrap();
    let args = [ptr_arg("x", &t), ptr_arg("y", &t), ptr_arg("out", &t)];
    launch(info, 0, &args, [0, 1, 1], &[ScalarArg::I32(4), ScalarArg::F32(1.0)], &|_| unreachable!()).unwrap();
    // A CPU tensor among GPU ones.
    let cpu = Tensor::<f32>::zeros(&Device::cpu(), &[4]).unwrap();
    let args = [ptr_arg("x", &t), ptr_arg("y", &cpu), ptr_arg("out", &t)];
    let err = launch(info, 0, &args, [1, 1, 1], &[ScalarArg::I32(4), ScalarArg::F32(1.0)], &|_| unreachable!())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "argument `y` is on device cpu, but the kernel launches on cuda:0 (the device of `x`)"
    );
    // An instance index past the list.
    let err = run_axpy(info, 7, &dev, 8).unwrap_err();
    assert!(matches!(err, LaunchError::NoInstance { .. }), "{err}");
}

#[test]
fn missing_ptx_says_where_it_looked_and_what_to_run() {
    let Some(dev) = gpu_for_ptx("missing_ptx_says_where_it_looked_and_what_to_run") else { return };
    let dir = scratch_dir("missing");
    let info = axpy_info("kr_cuda_test_missing", &dir, &[("axpy", 0)]);
    let err = run_axpy(info, 0, &dev, 8).unwrap_err();
    let LaunchError::PtxNotFound { searched, .. } = &err else { panic!("expected PtxNotFound, got {err:?}") };
    let msg = err.to_string();
    println!("{msg}");
    assert!(msg.starts_with("no PTX for kernel `axpy` (crate `kr_cuda_test_missing`, sm_"), "{msg}");
    assert!(msg.contains("run `cargo xtask build-ptx`"), "{msg}");
    assert!(searched.contains(&dir.join("target/ptx/sm_80/kr_cuda_test_missing.ptx")) || dev.compute_capability() == Some((9, 0)));
    if dev.compute_capability() == Some((9, 0)) {
        assert!(searched.contains(&dir.join("target/ptx/sm_90a/kr_cuda_test_missing.ptx")), "{searched:?}");
    }
}

#[test]
fn stale_ptx_is_reported_by_entry() {
    let Some(dev) = gpu_for_ptx("stale_ptx_is_reported_by_entry") else { return };
    let dir = scratch_dir("stale");
    place_ptx(&dir, "kr_cuda_test_stale", PTX);
    let info = axpy_info("kr_cuda_test_stale", &dir, &[("axpy__renamed", 0)]);
    let err = run_axpy(info, 0, &dev, 8).unwrap_err();
    let msg = err.to_string();
    println!("{msg}");
    assert!(matches!(err, LaunchError::MissingEntry { entry: "axpy__renamed", .. }), "{err:?}");
    assert!(msg.contains("has no entry `axpy__renamed` for kernel `axpy`: the PTX is stale"), "{msg}");
    assert!(msg.contains("or was built for other kernels only (`build-ptx --kernel`, `KERNEL_BUILD_KERNELS`)"), "{msg}");
    assert!(msg.ends_with("rebuild it with `cargo xtask build-ptx`"), "{msg}");
}

#[test]
fn broken_ptx_is_reported_with_the_driver_error() {
    let Some(dev) = gpu_for_ptx("broken_ptx_is_reported_with_the_driver_error") else { return };
    let dir = scratch_dir("broken");
    place_ptx(&dir, "kr_cuda_test_broken", &PTX.replace("fma.rn.f32", "fma.bogus.f32"));
    let info = axpy_info("kr_cuda_test_broken", &dir, &[("axpy", 0)]);
    let err = run_axpy(info, 0, &dev, 8).unwrap_err();
    let msg = err.to_string();
    println!("{msg}");
    let LaunchError::PtxLoad { code, .. } = &err else { panic!("expected PtxLoad, got {err:?}") };
    assert!(code.starts_with("CUDA_ERROR_"), "{code}");
    assert!(msg.starts_with("could not load the PTX of kernel `axpy` from "), "{msg}");
}

#[test]
fn too_much_shared_memory_is_refused_before_launch() {
    let Some(dev) = gpu_for_ptx("too_much_shared_memory_is_refused_before_launch") else { return };
    let dir = scratch_dir("smem");
    let info = axpy_info("kr_cuda_test_smem", &dir, &[("axpy", 1 << 20)]);
    // Refused before looking for the PTX (there is none here).
    let err = run_axpy(info, 0, &dev, 8).unwrap_err();
    let msg = err.to_string();
    println!("{msg}");
    let LaunchError::SharedMemory { requested, available, .. } = err else { panic!("expected SharedMemory, got {err:?}") };
    assert_eq!(requested, 1 << 20);
    assert!((48 * 1024..1 << 20).contains(&available));
    assert!(msg.starts_with("kernel `axpy` (entry `axpy`) needs 1048576 bytes of shared memory per block, but this device allows at most "), "{msg}");
}

#[test]
fn interleaved_bench_times_each_function_on_the_gpu() {
    use kernel_runtime::baseline::cublas_matmul_f16;
    use kernel_runtime::testing::{do_bench_gpu_interleaved, BenchOptions};
    let Some(dev) = gpu("interleaved_bench_times_each_function_on_the_gpu") else { return };
    let mats = |n: usize, seed: u64| -> (Tensor<f16>, Tensor<f16>, Tensor<f16>) {
        (Tensor::randn(&dev, &[n, n], seed).unwrap(), Tensor::randn(&dev, &[n, n], seed + 1).unwrap(), Tensor::zeros(&dev, &[n, n]).unwrap())
    };
    let (a, b, c) = mats(256, 1);
    let (x, y, z) = mats(2048, 3);
    let mut small = || cublas_matmul_f16(&a, &b, &c);
    let mut large = || cublas_matmul_f16(&x, &y, &z);
    let opts = BenchOptions { warmup_ms: 5.0, rep_ms: 20.0, ..BenchOptions::default() };
    let r = do_bench_gpu_interleaved(&dev, &mut [&mut small, &mut large], &opts).unwrap();
    println!("{r:?}");
    assert_eq!(r.len(), 2);
    // 512 times the work: the 2048³ product takes longer (and each at least a microsecond).
    assert!(r[0].min_ms > 1e-3 && r[0].median_ms * 4.0 < r[1].median_ms, "{r:?}");
    assert!(r[0].reps > r[1].reps && r[1].reps >= 1, "{r:?}");
    // The timed calls wrote the product (z = x @ y; one entry checked on the host).
    let (xs, ys, zs) = (x.try_to_f64_vec().unwrap(), y.try_to_f64_vec().unwrap(), z.try_to_f64_vec().unwrap());
    let expected: f64 = (0..2048).map(|k| xs[5 * 2048 + k] * ys[k * 2048 + 7]).sum();
    assert!((zs[5 * 2048 + 7] - expected).abs() <= 0.05 + 0.01 * expected.abs(), "{} vs {expected}", zs[5 * 2048 + 7]);
}

#[test]
fn foreign_kernels_load_check_their_arguments_and_run() {
    use kernel_runtime::foreign::{ForeignArg, ForeignError, ForeignKernel, ForeignParam};
    let Some(dev) = gpu("foreign_kernels_load_check_their_arguments_and_run") else { return };
    let params = [ForeignParam::Ptr, ForeignParam::I32, ForeignParam::Ptr, ForeignParam::F32, ForeignParam::Ptr];
    // 100 KiB of dynamic shared memory: the load opts in (the kernel does not use it).
    let k = ForeignKernel::load(&dev, PTX.as_bytes(), "axpy", &params, 128, 100 * 1024).unwrap();
    assert_eq!(k.name(), "axpy");
    let n = 1000usize;
    let xs = Tensor::from_vec(&dev, &[n + 3], (0..n + 3).map(|i| i as f32).collect()).unwrap();
    let x = xs.narrow(0, 3, n).unwrap();
    let y = Tensor::full(&dev, &[n], 0.25f32).unwrap();
    let out = Tensor::<f32>::full(&dev, &[n], f32::NAN).unwrap();
    let args = [
        ForeignArg::tensor(&x).unwrap(),
        ForeignArg::I32(n as i32),
        ForeignArg::tensor(&y).unwrap(),
        ForeignArg::F32(2.0),
        ForeignArg::tensor(&out).unwrap(),
    ];
    // SAFETY: axpy touches x, y and out at indices below n, which all three hold.
    unsafe { k.launch([cdiv(n as u32, 128), 1, 1], &args) }.unwrap();
    let want: Vec<f32> = (0..n).map(|i| 2.0 * (i + 3) as f32 + 0.25).collect();
    assert_eq!(out.to_vec(), want);
    // Wrong arguments and grids are errors before anything runs.
    let err = unsafe { k.launch([1, 1, 1], &args[..4]) }.unwrap_err();
    assert!(matches!(err, ForeignError::Arguments { .. }), "{err}");
    assert_eq!(err.to_string(), "kernel `axpy`: 4 arguments given, the entry declares 5 parameters");
    let err = unsafe { k.launch([0, 1, 1], &args) }.unwrap_err();
    assert!(matches!(err, ForeignError::Launch { .. }), "{err}");
    assert!(err.to_string().starts_with("kernel `axpy`: grid [0, 1, 1] (the device allows 1..="), "{err}");
    // A missing entry, a broken image and an oversized block are load errors.
    let err = ForeignKernel::load(&dev, PTX.as_bytes(), "nope", &params, 128, 0).unwrap_err();
    assert!(err.to_string().contains("cuModuleGetFunction(nope)"), "{err}");
    let err = ForeignKernel::load(&dev, b"not an image", "axpy", &params, 128, 0).unwrap_err();
    assert!(matches!(err, ForeignError::Device(_)), "{err}");
    let err = ForeignKernel::load(&dev, PTX.as_bytes(), "axpy", &params, 4096, 0).unwrap_err();
    assert!(matches!(err, ForeignError::Launch { .. }), "{err}");
    assert!(err.to_string().starts_with("kernel `axpy`: 4096 threads per block (the device allows 1..="), "{err}");
    let err = ForeignKernel::load(&dev, PTX.as_bytes(), "axpy", &params, 128, 1 << 30).unwrap_err();
    assert!(err.to_string().starts_with("kernel `axpy`: 1073741824 bytes of shared memory per block (the device allows "), "{err}");
}

/// Views over device memory another library allocated (here a second cudarc handle of the
/// primary context, as candle opens it): no copy (same addresses), writes seen by the owner,
/// and typed errors for every bad layout, address, device and context.
#[test]
fn views_over_foreign_device_memory() {
    use kernel_runtime::cudarc::driver::{CudaContext, DevicePtr};
    use kernel_runtime::TensorError;
    let Some(dev) = gpu("views_over_foreign_device_memory") else { return };
    let theirs = CudaContext::new(0).unwrap().new_stream().unwrap();
    let mut slice = theirs.clone_htod(&(0..12).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let ptr = slice.device_ptr(&theirs).0;
    theirs.synchronize().unwrap();
    // SAFETY (every view below): `slice` outlives the views, and its stream is synchronized
    // before the owner reads it.
    let raw = unsafe { Tensor::<f32>::from_raw_cuda(&dev, ptr, 12, &[4, 3], Some(&[1, 4])) }.unwrap();
    assert_eq!((raw.data_ptr(), raw.device()), (ptr, &dev));
    assert_eq!(raw.to_vec(), vec![0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0]);
    assert!(raw.cuda_slice().is_none());
    let v = unsafe { Tensor::from_cuda_view(&slice.slice(4..), &[2, 4], None) }.unwrap();
    assert_eq!((v.data_ptr(), v.to_vec()), (ptr + 16, (4..12).map(|i| i as f32).collect()));
    drop((raw, v));
    let w = unsafe { Tensor::from_cuda_view_mut(&mut slice.slice_mut(8..), &[2, 2], None) }.unwrap();
    w.t().narrow(0, 1, 1).unwrap().fill(-1.0);
    dev.synchronize().unwrap();
    drop(w);
    let mut want: Vec<f32> = (0..12).map(|i| i as f32).collect();
    (want[9], want[11]) = (-1.0, -1.0);
    assert_eq!(theirs.clone_dtoh(&slice).unwrap(), want);

    let err = unsafe { Tensor::<f32>::from_raw_cuda(&dev, ptr + 2, 4, &[4], None) }.unwrap_err();
    assert_eq!(err, TensorError::Misaligned { addr: ptr + 2, dtype: DTypeKind::F32, align: 4 });
    let err = unsafe { Tensor::<f32>::from_raw_cuda(&dev, ptr, 12, &[13], None) }.unwrap_err();
    assert!(matches!(err, TensorError::ViewOutOfBounds { last: 12, len: 12, .. }), "{err}");
    let host = vec![0.0f32; 4];
    let err = unsafe { Tensor::<f32>::from_raw_cuda(&dev, host.as_ptr() as u64, 4, &[4], None) }.unwrap_err();
    assert_eq!(err.to_string(), "the memory is on memory CUDA does not know (not a device allocation), but the view was asked for on cuda:0");
    let err = unsafe { Tensor::<f32>::from_raw_cuda(&Device::cpu(), ptr, 4, &[4], None) }.unwrap_err();
    assert!(matches!(err, TensorError::WrongDevice { .. }), "{err}");
    // Another context of the same GPU: memory allocated in it (not from a stream-ordered pool,
    // which belongs to the device, not to a context) and its streams are refused.
    let other = CudaContext::new_non_primary(0, 0).unwrap();
    let other_stream = other.new_stream().unwrap();
    other.bind_to_thread().unwrap();
    // SAFETY: a plain allocation in `other`, freed below.
    let alien_ptr = unsafe { kernel_runtime::cudarc::driver::result::malloc_sync(16) }.unwrap();
    let err = unsafe { Tensor::<f32>::from_raw_cuda(&dev, alien_ptr, 4, &[4], None) }.unwrap_err();
    assert!(err.to_string().contains("in another CUDA context than its primary context"), "{err}");
    other.bind_to_thread().unwrap();
    // SAFETY: allocated above, no view of it exists.
    unsafe { kernel_runtime::cudarc::driver::result::free_sync(alien_ptr) }.unwrap();
    let alien = other_stream.alloc_zeros::<f32>(4).unwrap();
    let err = Tensor::from_cuda_slice(alien, &[4], None).unwrap_err();
    assert!(matches!(err, TensorError::WrongDevice { .. }), "{err}");
    let err = dev.wrap_stream(&other_stream).unwrap_err();
    assert!(matches!(err, DeviceError::StreamMismatch { .. }), "{err}");

    // An owned slice goes in and comes back out, the same allocation.
    let s = theirs.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let p = s.device_ptr(&theirs).0;
    let t = Tensor::from_cuda_slice(s, &[2, 2], None).unwrap();
    assert_eq!((t.data_ptr(), t.t().to_vec()), (p, vec![1.0, 3.0, 2.0, 4.0]));
    let view = t.narrow(0, 1, 1).unwrap();
    let t = t.into_cuda_slice().unwrap_err(); // a view is alive
    drop(view);
    let back = t.into_cuda_slice().unwrap();
    assert_eq!(back.device_ptr(&theirs).0, p);
    assert_eq!(theirs.clone_dtoh(&back).unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}

/// Launches under `with_stream` run in the caller's stream order: inputs the caller copies on
/// its stream just before are read, a tensor this crate zeroed on its own stream is written
/// after the zeroing, and the caller reads the result on its stream with no other wait.
#[test]
fn launches_run_in_the_callers_stream_order() {
    use kernel_runtime::cudarc::driver::CudaContext;
    use kernel_runtime::with_stream;
    let Some(dev) = gpu_for_ptx("launches_run_in_the_callers_stream_order") else { return };
    let dir = scratch_dir("axpy-stream");
    place_ptx(&dir, "kr_cuda_test_axpy_stream", PTX);
    let info = axpy_info("kr_cuda_test_axpy_stream", &dir, &[("axpy", 0)]);
    let theirs = CudaContext::new(0).unwrap().new_stream().unwrap();
    let stream = dev.wrap_stream(&theirs).unwrap();
    assert_eq!(stream.device(), dev);
    let n = 1 << 22;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    for round in 0..3 {
        // Queued on their stream, not waited for: the launch must come after.
        let mut x_mem = theirs.alloc_zeros::<f32>(n).unwrap();
        theirs.memcpy_htod(&xs, &mut x_mem).unwrap();
        let mut out_mem = theirs.alloc_zeros::<f32>(n).unwrap();
        // SAFETY: the slices outlive the views; every use is ordered on `theirs`.
        let x = unsafe { Tensor::from_cuda_view(&x_mem.as_view(), &[n], None) }.unwrap();
        let out = unsafe { Tensor::from_cuda_view_mut(&mut out_mem.as_view_mut(), &[n], None) }.unwrap();
        let y = Tensor::full(&dev, &[n], round as f32).unwrap(); // on the device's stream
        let args = [ptr_arg("x", &x), ptr_arg("y", &y), ptr_arg("out", &out)];
        let scalars = [ScalarArg::I32(n as i32), ScalarArg::F32(2.0)];
        with_stream(&stream, || launch(info, 0, &args, [cdiv(n as u32, 128), 1, 1], &scalars, &|_| unreachable!())).unwrap();
        drop((x, out, y));
        let got = theirs.clone_dtoh(&out_mem).unwrap(); // waits for their stream only
        let bad = got.iter().zip(&xs).position(|(&o, &x)| o != 2.0 * x + round as f32);
        assert_eq!(bad, None, "round {round}: first wrong element");
    }
    stream.synchronize().unwrap();
    // The legacy default stream works too; a CPU launch inside `with_stream` is unaffected.
    // SAFETY: the legacy default stream always exists.
    let legacy = unsafe { dev.wrap_raw_stream(std::ptr::null_mut()) }.unwrap();
    let got = with_stream(&legacy, || run_axpy(info, 0, &dev, 1000)).unwrap();
    assert_eq!(got, (0..1000).map(|i| 2.0 * (i + 3) as f32 + 0.25).collect::<Vec<_>>());
    assert!(matches!(Device::cpu().wrap_stream(&theirs), Err(DeviceError::StreamMismatch { .. })));
}

/// DLPack on the GPU: export and import share the device memory (same address), with the
/// strides and the byte offset honoured.
#[cfg(feature = "dlpack")]
#[test]
fn dlpack_round_trip_on_the_gpu() {
    use kernel_runtime::dlpark::ffi::{DLDataType, DLDevice};
    use kernel_runtime::dlpark::metadata::Dynamic;
    use kernel_runtime::cudarc::driver::DevicePtr;
    let Some(dev) = gpu("dlpack_round_trip_on_the_gpu") else { return };
    let a = Tensor::from_vec(&dev, &[3, 4], (0..12).map(|i| i as f32).collect()).unwrap();
    let v = a.narrow(1, 1, 2).unwrap().t();
    let m = v.to_dlpack().unwrap();
    let d = m.validate().unwrap();
    assert_eq!((d.device(), d.shape(), d.strides()), (DLDevice::cuda(0), &[2i64, 3][..], Some(&[1i64, 4][..])));
    assert_eq!(d.data_ptr() as u64, a.data_ptr() + 4);
    // SAFETY: the export keeps `a`'s memory alive.
    let b = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap();
    assert_eq!((b.data_ptr(), b.to_vec()), (a.data_ptr() + 4, v.to_vec()));
    b.fill(0.0);
    assert_eq!(a.to_vec(), vec![0.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 7.0, 8.0, 0.0, 0.0, 11.0]);
    // A producer's descriptor with a byte offset (a cudarc slice it keeps in its context).
    let stream = dev.cuda_stream().unwrap();
    let slice = stream.clone_htod(&(0..8).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let base = slice.device_ptr(&stream).0;
    let mut init = Dynamic::new(vec![3i64], vec![2i64]).initialize(Box::new(slice)).unwrap();
    init.set_data(base as usize as *mut std::ffi::c_void).set_byte_offset(4).set_device(DLDevice::cuda(0)).set_dtype(DLDataType::F32);
    // SAFETY: the context owns the slice; elements 1, 3, 5 lie inside it.
    let m = unsafe { init.finish() };
    let c = unsafe { Tensor::<f32>::from_dlpack(m) }.unwrap();
    assert_eq!((c.data_ptr(), c.to_vec()), (base + 4, vec![1.0, 3.0, 5.0]));
}
