//! Triton's matmul tutorial kernel written by hand against the CPU backend
//! contract, the way `#[kernel]` generated code calls it. Shared by
//! `tests/handwritten_matmul.rs` and `examples/cpu_matmul.rs`.

use kernel_runtime::__private::cpu::{
    arange, cast, dot, expand_dims, full, load, map1, map2, ptr_add, select, store, try_map2, Blk,
    Ctx, KernelError, Num, Site, P,
};
use kernel_runtime::__private::{launch_cpu, ptr_arg, KernelInfo, ModuleInfo, ParamInfo, ParamKind};
use kernel_runtime::{cdiv, f16, Config, DTypeKind, LaunchError, MetaValue, Tensor};

const NAME: &str = "matmul_kernel";

pub static CONFIGS: [Config; 1] = [Config::new(
    &[
        ("BLOCK_M", MetaValue::Int(64)),
        ("BLOCK_N", MetaValue::Int(64)),
        ("BLOCK_K", MetaValue::Int(32)),
        ("GROUP_M", MetaValue::Int(8)),
    ],
    4,
    3,
)];

pub static INFO: KernelInfo = KernelInfo {
    name: NAME,
    params: &[
        ParamInfo { name: "a_ptr", kind: ParamKind::Ptr(DTypeKind::F16) },
        ParamInfo { name: "b_ptr", kind: ParamKind::Ptr(DTypeKind::F16) },
        ParamInfo { name: "c_ptr", kind: ParamKind::Ptr(DTypeKind::F16) },
        ParamInfo { name: "M", kind: ParamKind::Scalar(DTypeKind::I32) },
        ParamInfo { name: "N", kind: ParamKind::Scalar(DTypeKind::I32) },
        ParamInfo { name: "K", kind: ParamKind::Scalar(DTypeKind::I32) },
    ],
    configs: &CONFIGS,
    key: &["M", "N", "K"],
    instances: &[],
    module: ModuleInfo { crate_name: "t", manifest_dir: ".", embedded: &[] }, asserts: &[],
};

const fn site(line: u32, column: u32) -> Site {
    Site { kernel: NAME, line, column }
}

#[derive(Clone, Copy)]
pub struct Meta {
    pub block_m: i32,
    pub block_n: i32,
    pub block_k: i32,
    pub group_m: i32,
    pub leaky_relu: bool,
}

pub struct Scalars {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub stride_am: i32,
    pub stride_ak: i32,
    pub stride_bk: i32,
    pub stride_bn: i32,
    pub stride_cm: i32,
    pub stride_cn: i32,
}

fn offsets(base: &Blk<P>, rows: &Blk<i32>, row_stride: i32, cols: &Blk<i32>, col_stride: i32) -> Blk<P> {
    let r = map2(&expand_dims(rows, 1), &Blk::scalar(row_stride), Num::mul);
    let c = map2(&expand_dims(cols, 0), &Blk::scalar(col_stride), Num::mul);
    map2(&map2(base, &r, ptr_add), &c, ptr_add)
}

/// One program instance of the tutorial kernel.
pub fn body(ctx: &Ctx<'_>, s: &Scalars, meta: Meta, mask_k: bool) -> Result<(), KernelError> {
    let (bm, bn, bk) = (meta.block_m, meta.block_n, meta.block_k);
    let pid = ctx.program_id(0);
    let num_pid_m = cdiv(s.m, bm);
    let num_pid_n = cdiv(s.n, bn);
    let num_pid_in_group = meta.group_m * num_pid_n;
    let group_id = pid / num_pid_in_group;
    let first_pid_m = group_id * meta.group_m;
    let group_size_m = Ord::min(num_pid_m - first_pid_m, meta.group_m);
    let pid_m = first_pid_m + pid % group_size_m;
    let pid_n = (pid % num_pid_in_group) / group_size_m;

    // offs_am = (pid_m * BLOCK_M + arange(0, BLOCK_M)) % M  (rem can fail: try_map2)
    let offs_am = try_map2(
        &map2(&Blk::scalar(pid_m * bm), &arange(0, bm), Num::add),
        &Blk::scalar(s.m),
        Num::rem,
        &site(20, 15),
    )?;
    let offs_bn = try_map2(
        &map2(&Blk::scalar(pid_n * bn), &arange(0, bn), Num::add),
        &Blk::scalar(s.n),
        Num::rem,
        &site(21, 15),
    )?;
    let offs_k = arange(0, bk);
    let mut a_ptrs = offsets(&Blk::scalar(P::arg(0)), &offs_am, s.stride_am, &offs_k, s.stride_ak);
    let mut b_ptrs = offsets(&Blk::scalar(P::arg(1)), &offs_k, s.stride_bk, &offs_bn, s.stride_bn);
    let mut acc = full(&[bm as usize, bn as usize], 0.0f32);
    let zero = Blk::scalar(f16::ZERO);
    for kk in 0..cdiv(s.k, bk) {
        let remaining = Blk::scalar(s.k - kk * bk);
        let a_mask = map2(&expand_dims(&offs_k, 0), &remaining, Num::lt);
        let b_mask = map2(&expand_dims(&offs_k, 1), &remaining, Num::lt);
        let (am, bmask) = if mask_k { (Some(&a_mask), Some(&b_mask)) } else { (None, None) };
        let a = load::<f16>(ctx, &a_ptrs, am, Some(&zero), &site(30, 13))?;
        let b = load::<f16>(ctx, &b_ptrs, bmask, Some(&zero), &site(31, 13))?;
        acc = dot(&a, &b, Some(&acc));
        a_ptrs = map2(&a_ptrs, &Blk::scalar(bk * s.stride_ak), ptr_add);
        b_ptrs = map2(&b_ptrs, &Blk::scalar(bk * s.stride_bk), ptr_add);
    }
    if meta.leaky_relu {
        // where(x >= 0, x, 0.01 * x)
        let cond = map2(&acc, &Blk::scalar(0.0f32), Num::ge);
        acc = select(&cond, &acc, &map1(&acc, |x| Num::mul(x, 0.01f32)));
    }
    let c = cast::<f32, f16>(&acc);
    let offs_cm = map2(&Blk::scalar(pid_m * bm), &arange(0, bm), Num::add);
    let offs_cn = map2(&Blk::scalar(pid_n * bn), &arange(0, bn), Num::add);
    let c_ptrs = offsets(&Blk::scalar(P::arg(2)), &offs_cm, s.stride_cm, &offs_cn, s.stride_cn);
    let c_mask = map2(
        &map2(&expand_dims(&offs_cm, 1), &Blk::scalar(s.m), Num::lt),
        &map2(&expand_dims(&offs_cn, 0), &Blk::scalar(s.n), Num::lt),
        |x, y| x & y,
    );
    store(ctx, &c_ptrs, &c, Some(&c_mask), &site(44, 5))
}

/// The host wrapper: checks shapes, allocates `c`, launches.
pub fn matmul(a: &Tensor<f16>, b: &Tensor<f16>, meta: Meta, mask_k: bool) -> Result<Tensor<f16>, LaunchError> {
    let (&[m, k], &[k2, n]) = (a.shape(), b.shape()) else {
        return Err(LaunchError::InvalidArgument {
            arg: "a",
            expected: "2-D tensors".into(),
            found: format!("{:?} and {:?}", a.shape(), b.shape()),
        });
    };
    if k != k2 {
        return Err(LaunchError::InvalidArgument {
            arg: "b",
            expected: format!("{k} rows"),
            found: format!("{k2}"),
        });
    }
    let c = Tensor::<f16>::zeros(a.device(), &[m, n]).expect("shape is valid");
    let i = |v: usize| v as i32;
    let s = Scalars {
        m: i(m),
        n: i(n),
        k: i(k),
        stride_am: i(a.stride(0)),
        stride_ak: i(a.stride(1)),
        stride_bk: i(b.stride(0)),
        stride_bn: i(b.stride(1)),
        stride_cm: i(c.stride(0)),
        stride_cn: i(c.stride(1)),
    };
    let grid = [(cdiv(s.m, meta.block_m) * cdiv(s.n, meta.block_n)) as u32, 1, 1];
    let args = [ptr_arg("a_ptr", a), ptr_arg("b_ptr", b), ptr_arg("c_ptr", &c)];
    launch_cpu(&INFO, &args, grid, &|ctx| body(ctx, &s, meta, mask_k))?;
    Ok(c)
}
