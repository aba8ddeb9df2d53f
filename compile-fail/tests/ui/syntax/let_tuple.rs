// syntax: `let` binds a name or a tuple of names (immutably); other patterns are errors
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let (mut a, b) = (n, n);
    let [c, d] = [n, n];
    let (e, f) = (n, n, n);
}

fn main() {}
