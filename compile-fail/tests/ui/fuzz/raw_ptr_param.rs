// Fuzz regression (was a macro panic): a pointer parameter named by a raw identifier (`r#type`) made the name of its autotuning scratch copy `__s_r#type`, which `format_ident!` rejected (`is not a valid Ident`). The kernel now expands: the one error is main's misuse of the generated `Meta`.
use kernel_std::prelude::*;

#[kernel]
fn k(r#type: Ptr<f32>) {
    store(r#type + arange(0, 16), 1.0);
}

fn main() {
    let _: () = k::Meta {};
}
