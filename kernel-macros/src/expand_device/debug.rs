//! `device_assert` and `device_print` on the GPU. An assertion's failures are found by every
//! thread over its elements; the block agrees on the program's first one (smallest flat index)
//! and its thread records it in the launch's fault record (`kernel_std::device::report_assert`),
//! which the runtime reads back after the launch, as it does out-of-bounds accesses. A print is
//! one `printf` (`vprintf`) per element, by the thread that owns it.

use super::*;
use crate::diag::Sp;
use quote::quote_spanned;

/// The code of a dtype in a fault record, as the runtime decodes it
/// (`kernel_runtime`'s `assert_value_text`): a fixed table, not an enum's order.
fn dtype_code(d: DType) -> u32 {
    match d {
        DType::F16 => 0,
        DType::BF16 => 1,
        DType::F32 => 2,
        DType::F64 => 3,
        DType::I32 => 4,
        DType::U32 => 5,
        DType::I64 => 6,
        DType::Bool => 7,
        DType::I8 => 8,
        DType::I16 => 9,
        DType::U8 => 10,
        DType::U16 => 11,
        DType::F8E4M3 => 12,
        DType::F8E5M2 => 13,
    }
}

/// The `printf` conversion of a printed value of dtype `d`, for the argument
/// `kernel_std::device::PrintArg` makes of it.
fn print_spec(d: DType) -> &'static str {
    match d {
        DType::F16 => "%.5g",
        DType::BF16 => "%.4g",
        DType::F8E4M3 | DType::F8E5M2 => "%.3g",
        DType::F32 => "%.9g",
        DType::F64 => "%.17g",
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => "%lld",
        DType::U8 | DType::U16 | DType::U32 => "%llu",
        DType::Bool => "%s",
    }
}

/// The fault record's operand word of an assertion: how many operand values, their dtype
/// codes (bits 8.. and 16..) and whether the condition is a scalar (bit 31).
fn operand_word(k: &Kernel, operands: &[(String, ExprId)], scalar: bool) -> u32 {
    let codes = operands.iter().enumerate().map(|(i, (_, e))| k.exprs[*e].ty.dtype().map_or(0, dtype_code) << (8 + 8 * i));
    codes.fold(operands.len() as u32 | if scalar { 1 << 31 } else { 0 }, |w, c| w | c)
}

impl DevGen<'_> {
    /// `device_assert(cond)` at `span`, with the values of `operands` reported. A scalar
    /// condition is uniform: thread 0 reports it. For a block, each thread finds the first of
    /// its elements where `cond` is false (with the operands' values there); when any thread
    /// found one (a vote in one barrier), the block takes the smallest index through shared
    /// memory and the thread that owns it reports.
    /// A `hint`'s check (a scalar condition) ends the program where it fails: the code after it
    /// relies on the hint.
    pub(super) fn gen_assert(&mut self, cond: ExprId, operands: &[(String, ExprId)], span: Sp, hint: bool) -> TokenStream {
        let d = &self.p.d;
        let (line, column) = (quote_spanned!(span.start=> ::core::line!()), quote_spanned!(span.start=> ::core::column!()));
        let scalar = self.shapes[cond].is_empty();
        let word = operand_word(self.k, operands, scalar);
        let pid = (0..3u8).map(|a| {
            let p = self.program_id_code(a);
            quote!((#p as u32))
        });
        let report = quote!(#d::report_assert(__fault, __tag, #line, #column, __af as u64, #word, [#(#pid),*], __av););
        let values = |g: &mut Self| {
            let mut bits: Vec<TokenStream> = operands
                .iter()
                .map(|(_, e)| {
                    let v = g.operand(cond, *e, &At::Own);
                    quote!(#d::AssertBits::assert_bits(#v))
                })
                .collect();
            bits.resize(2, quote!(0u64));
            quote!([#(#bits),*])
        };
        if scalar {
            let (c, vals) = (self.ev(cond, &At::Own), values(self));
            let report = quote!(let (__af, __av): (u32, [u64; 2]) = (0, #vals); #report);
            return match hint {
                true => quote!(if !(#c) { if __tid == 0 { #report } return; }),
                false => quote!(if !(#c) && __tid == 0 { #report }),
            };
        }
        let find = self.phase(self.numel(cond), |g| {
            let (c, vals) = (g.ev(cond, &At::Own), values(g));
            quote!(if __af == u32::MAX && !(#c) { __af = __f as u32; __av = #vals; })
        });
        let slot = self.alloc(4);
        quote! {{
            let mut __af: u32 = u32::MAX;
            let mut __av: [u64; 2] = [0u64; 2];
            #find
            if !#d::bar_and(__af == u32::MAX) {
                let __first: u32 = #d::block_min_u32(__af, #slot);
                if __af != u32::MAX && __af == __first {
                    #report
                }
            }
        }}
    }

    /// `device_print(prefix, values...)`: one `printf` of `pid (x, y, z) idx (i, j) <prefix>
    /// v1, v2` per element of the values (all of one shape), or, for scalars, one line by
    /// thread 0 without `idx`; the CPU backend writes the same lines (floats aside: `printf`'s
    /// `%g` there).
    pub(super) fn gen_print(&mut self, prefix: &str, values: &[ExprId]) -> TokenStream {
        let d = &self.p.d;
        let shape = values.first().map(|v| self.shapes[*v].clone()).unwrap_or_default();
        let format = Self::print_format(self.k, prefix, values, shape.len());
        let pid: Vec<TokenStream> = (0..3u8)
            .map(|a| {
                let p = self.program_id_code(a);
                quote!((#p as i64 as u64))
            })
            .collect();
        let args = |g: &mut Self| -> Vec<TokenStream> {
            let strides = (0..shape.len()).map(|i| shape[i + 1..].iter().product::<usize>());
            let idx = strides.zip(&shape).map(|(s, n)| quote!(((__f / #s) % #n) as u64));
            let vals = values.iter().map(|v| {
                let x = g.ev(*v, &At::Own);
                quote!(#d::PrintArg::print_arg(#x))
            });
            pid.iter().cloned().chain(idx).chain(vals).collect()
        };
        if shape.is_empty() {
            let a = args(self);
            return quote!(if __tid == 0 { #d::print(#format, [#(#a),*]); });
        }
        let numel: usize = shape.iter().product();
        self.phase(numel, |g| {
            let a = args(g);
            quote!(#d::print(#format, [#(#a),*]);)
        })
    }

    /// The NUL-terminated `printf` format of a `device_print` of `values` (of rank `rank`).
    fn print_format(k: &Kernel, prefix: &str, values: &[ExprId], rank: usize) -> proc_macro2::Literal {
        let mut f = String::from("pid (%lld, %lld, %lld)");
        if rank > 0 {
            f += &format!(" idx ({})", vec!["%lld"; rank].join(", "));
        }
        let specs: Vec<&str> = values.iter().map(|v| k.exprs[*v].ty.dtype().map_or("%lld", print_spec)).collect();
        let sep = if prefix.is_empty() || prefix.ends_with(' ') || values.is_empty() { "" } else { " " };
        let body = format!("{}{sep}{}", prefix.replace('%', "%%"), specs.join(", "));
        if !body.is_empty() {
            f += " ";
            f += &body;
        }
        f += "\n\0";
        proc_macro2::Literal::byte_string(f.as_bytes())
    }
}
