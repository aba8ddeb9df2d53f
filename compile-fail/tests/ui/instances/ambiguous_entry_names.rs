// instances: helper names containing `__` can give two instances the same device entry name
// (`k__a__b__c` for F = a__b, G = c and for F = a, G = b__c)
use kernel_std::prelude::*;

#[kernel_module]
mod m {
    #[helper]
    fn a(x: Block) -> Block {
        x
    }
    #[helper]
    fn a__b(x: Block) -> Block {
        x
    }
    #[helper]
    fn c(x: Block) -> Block {
        x
    }
    #[helper]
    fn b__c(x: Block) -> Block {
        x
    }

    #[kernel(F = [a__b, a], G = [c, b__c])]
    fn k<const F: Func, const G: Func>(x: Ptr<f32>) {
        let offs = arange(0, 16);
        store(x + offs, G(F(load(x + offs))));
    }
}

fn main() {}
