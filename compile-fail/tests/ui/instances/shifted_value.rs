// instances: meta values are integer literals, not expressions
use kernel_std::prelude::*;

#[kernel(B = [1 << 40])]
fn k<const B: i64>(x: Ptr<f32>) {
    let offs = arange(0, 16);
    store(x + offs, load(x + offs));
}

fn main() {}
