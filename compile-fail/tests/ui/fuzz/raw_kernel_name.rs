// Fuzz regression (was a macro panic): a kernel named by a raw identifier (`fn r#type`) made the exported instance description `__KERNEL_META_r#type`, which `format_ident!` rejected (`is not a valid Ident`). The kernel now expands: the one error is main's misuse of the generated `Meta`.
use kernel_std::prelude::*;

#[kernel]
fn r#type(x: Ptr<f32>) {
    store(x + arange(0, 16), 1.0);
}

fn main() {
    let _: () = r#type::Meta {};
}
