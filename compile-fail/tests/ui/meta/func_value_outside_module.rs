// meta: outside a #[kernel_module] there are no helpers to name
use kernel_std::prelude::*;

#[kernel(ACT = [None, Some(relu)])]
fn k<const ACT: Option<Func>>(x: Ptr<f32>, n: i32) {
    let offs = arange(0, 16);
    let mut v = load(x + offs);
    if let Some(f) = ACT {
        v = f(v);
    }
    store(x + offs, v);
}

fn main() {}
