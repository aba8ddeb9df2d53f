//! Symbolic block dimensions: polynomials over the kernel's meta-parameters.
//!
//! `arange(0, BLOCK_M)` has shape `[BLOCK_M]`; `zeros([2 * BLOCK_K, 16])` has shape
//! `[2*BLOCK_K, 16]`. Two dimensions are equal when their normal forms are equal, so
//! `BLOCK_M` and `BLOCK_N` never unify even if an instance gives them the same value.

use std::collections::BTreeMap;
use std::fmt;

/// A dimension: sum of `coefficient * product(symbols)`; symbols are sorted meta names.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct Dim {
    terms: BTreeMap<Vec<String>, i64>,
}

pub type Shape = Vec<Dim>;

impl Dim {
    pub fn constant(c: i64) -> Dim {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Vec::new(), c);
        }
        Dim { terms }
    }

    pub fn symbol(name: &str) -> Dim {
        let mut terms = BTreeMap::new();
        terms.insert(vec![name.to_string()], 1);
        Dim { terms }
    }

    /// The value when the dimension does not depend on any meta-parameter.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    pub fn add(&self, o: &Dim) -> Dim {
        let mut terms = self.terms.clone();
        for (k, v) in &o.terms {
            let e = terms.entry(k.clone()).or_insert(0);
            *e = e.wrapping_add(*v);
        }
        terms.retain(|_, v| *v != 0);
        Dim { terms }
    }

    pub fn neg(&self) -> Dim {
        Dim { terms: self.terms.iter().map(|(k, v)| (k.clone(), v.wrapping_neg())).collect() }
    }

    pub fn sub(&self, o: &Dim) -> Dim {
        self.add(&o.neg())
    }

    pub fn mul(&self, o: &Dim) -> Dim {
        let mut terms: BTreeMap<Vec<String>, i64> = BTreeMap::new();
        for (ka, va) in &self.terms {
            for (kb, vb) in &o.terms {
                let mut k: Vec<String> = ka.iter().chain(kb.iter()).cloned().collect();
                k.sort();
                let e = terms.entry(k).or_insert(0);
                *e = e.wrapping_add(va.wrapping_mul(*vb));
            }
        }
        terms.retain(|_, v| *v != 0);
        Dim { terms }
    }

    /// Whether any coefficient is too large to be a block size (arithmetic above wrapped).
    pub fn is_unreasonable(&self) -> bool {
        self.terms.values().any(|v| v.unsigned_abs() > (1u64 << 40))
    }

    /// Evaluates with concrete meta-parameter values (`None` if a symbol has no value).
    pub fn eval(&self, value_of: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        let mut total: i64 = 0;
        for (syms, c) in &self.terms {
            let mut t = *c;
            for s in syms {
                t = t.checked_mul(value_of(s)?)?;
            }
            total = total.checked_add(t)?;
        }
        Some(total)
    }

    /// The terms `(symbols, coefficient)` of the polynomial.
    pub fn terms(&self) -> impl Iterator<Item = (&Vec<String>, i64)> {
        self.terms.iter().map(|(k, v)| (k, *v))
    }

    pub fn is_one(&self) -> bool {
        self.as_const() == Some(1)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return write!(f, "0");
        }
        let mut first = true;
        // Symbolic terms first, the constant last: `BLOCK_K - 1`.
        let ordered = self.terms.iter().filter(|(k, _)| !k.is_empty()).chain(self.terms.iter().filter(|(k, _)| k.is_empty()));
        for (syms, c) in ordered {
            let (sign, mag) = if *c < 0 { ("-", -c) } else { ("+", *c) };
            if first {
                if sign == "-" {
                    write!(f, "-")?;
                }
            } else {
                write!(f, " {sign} ")?;
            }
            first = false;
            if syms.is_empty() {
                write!(f, "{mag}")?;
            } else {
                if mag != 1 {
                    write!(f, "{mag}*")?;
                }
                write!(f, "{}", syms.join("*"))?;
            }
        }
        Ok(())
    }
}

pub fn shape_to_string(s: &[Dim]) -> String {
    let parts: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// NumPy broadcasting of two symbolic shapes; `None` when they are incompatible.
pub fn broadcast(a: &[Dim], b: &[Dim]) -> Option<Shape> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let da = if i + a.len() >= n { Some(&a[i + a.len() - n]) } else { None };
        let db = if i + b.len() >= n { Some(&b[i + b.len() - n]) } else { None };
        out.push(match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(x), Some(y)) if x == y => x.clone(),
            (Some(x), Some(y)) if x.is_one() => y.clone(),
            (Some(x), Some(y)) if y.is_one() => x.clone(),
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form_unifies_commuted_products() {
        let a = Dim::symbol("M").mul(&Dim::constant(2)).mul(&Dim::symbol("K"));
        let b = Dim::symbol("K").mul(&Dim::symbol("M")).add(&Dim::symbol("M").mul(&Dim::symbol("K")));
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "2*K*M");
    }

    #[test]
    fn broadcasting_rules() {
        let m = Dim::symbol("BLOCK_M");
        let n = Dim::symbol("BLOCK_N");
        let one = Dim::constant(1);
        assert_eq!(broadcast(&[m.clone(), one.clone()], &[one.clone(), n.clone()]), Some(vec![m.clone(), n.clone()]));
        assert_eq!(broadcast(&[], &[n.clone()]), Some(vec![n.clone()]));
        assert_eq!(broadcast(&[m.clone()], &[n.clone()]), None);
    }

    #[test]
    fn eval_with_values() {
        let d = Dim::symbol("A").sub(&Dim::constant(3));
        assert_eq!(d.eval(&|s| (s == "A").then_some(16)), Some(13));
        assert_eq!(d.eval(&|_| None), None);
        assert_eq!(d.to_string(), "A - 3");
    }
}
