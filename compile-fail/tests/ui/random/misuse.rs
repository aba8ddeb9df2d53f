// random: the seed is an integer scalar, offsets are integers, the 4x forms bind four names
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, seed: i32) {
    let offs = arange(0, 16);
    let a = rand(offs, offs);
    let b = randn(seed, offs.to::<f32>());
    let c = randint4x(seed, offs);
    let (d, e) = rand4x(seed, offs);
    let f = rand(seed, offs, 0);
    store(x + offs, a + b);
}

fn main() {}
