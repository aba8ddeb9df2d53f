// shape: as_col turns a 1-D block into a column
use kernel_std::prelude::*;

#[kernel]
fn k(x: Ptr<f32>, n: i32) {
    let tile = zeros::<f32>([16, 16]);
    let col = tile.as_col();
}

fn main() {}
