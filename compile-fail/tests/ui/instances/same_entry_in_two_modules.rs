// instances: two kernels named `scale` in two modules of one crate get the same device entry
// (`scale__B_64`); entry symbols are crate-wide, so the second one is an error at its name

mod first {
    use kernel_std::prelude::*;

    #[kernel(B = [64])]
    pub fn scale<const B: i32>(x: Ptr<f32>, n: i32) {
        let i = arange(0, B);
        store(x + i, load(x + i, i < n) * 2.0, i < n);
    }
}

mod second {
    use kernel_std::prelude::*;

    #[kernel(B = [64])]
    pub fn scale<const B: i32>(x: Ptr<f32>, n: i32) {
        let i = arange(0, B);
        store(x + i, load(x + i, i < n) * 3.0, i < n);
    }
}

fn main() {}
