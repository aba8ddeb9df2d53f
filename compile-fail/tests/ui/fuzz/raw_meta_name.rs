// Fuzz regression (was a macro panic): a meta-parameter named by a raw identifier (`r#type`) made the device entry name `k__r#type_16`, which `format_ident!` rejected (`is not a valid Ident`). The kernel now expands (entry `k__type_16`): the one error is main's misuse of the generated `Meta`, which has the field.
use kernel_std::prelude::*;

#[kernel(r#type = [16])]
fn k<const r#type: i32>(x: Ptr<f32>) {
    store(x + arange(0, r#type), 1.0);
}

fn main() {
    let _: () = k::Meta { r#type: 16 };
}
