// depth: helpers calling each other twice per level for 15 levels inline to 2^15 copies: rejected, fast
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn h0(x: Block) -> Block {
        x * 2.0
    }

    #[helper]
    fn h1(x: Block) -> Block {
        h0(x) + h0(x)
    }

    #[helper]
    fn h2(x: Block) -> Block {
        h1(x) + h1(x)
    }

    #[helper]
    fn h3(x: Block) -> Block {
        h2(x) + h2(x)
    }

    #[helper]
    fn h4(x: Block) -> Block {
        h3(x) + h3(x)
    }

    #[helper]
    fn h5(x: Block) -> Block {
        h4(x) + h4(x)
    }

    #[helper]
    fn h6(x: Block) -> Block {
        h5(x) + h5(x)
    }

    #[helper]
    fn h7(x: Block) -> Block {
        h6(x) + h6(x)
    }

    #[helper]
    fn h8(x: Block) -> Block {
        h7(x) + h7(x)
    }

    #[helper]
    fn h9(x: Block) -> Block {
        h8(x) + h8(x)
    }

    #[helper]
    fn h10(x: Block) -> Block {
        h9(x) + h9(x)
    }

    #[helper]
    fn h11(x: Block) -> Block {
        h10(x) + h10(x)
    }

    #[helper]
    fn h12(x: Block) -> Block {
        h11(x) + h11(x)
    }

    #[helper]
    fn h13(x: Block) -> Block {
        h12(x) + h12(x)
    }

    #[helper]
    fn h14(x: Block) -> Block {
        h13(x) + h13(x)
    }

    #[helper]
    fn h15(x: Block) -> Block {
        h14(x) + h14(x)
    }

    #[kernel]
    fn k(x: Ptr<f32>, out: Ptr<f32>) {
        let offs = arange(0, 16);
        store(out + offs, h15(load(x + offs)));
    }
}

fn main() {}
