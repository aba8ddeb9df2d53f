//! Atomics on both backends: sums and histograms from many programs (exact: the values are
//! small integers), `max`/`min`, bitwise operations, and the old values `atomic_add`,
//! `atomic_cas` and `atomic_xchg` return (tickets are a permutation; exactly one program
//! claims each slot).

use kernel_runtime::{bf16, f16, Tensor};
use tests::atomics::{atomic_extrema_bits, atomic_sums, atomic_tickets};
use tests::test_device;

#[test]
fn sums_and_histograms_from_many_programs() {
    let dev = test_device();
    let n = 1000usize;
    let xs: Vec<f32> = (0..n).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let bins: Vec<i32> = (0..n).map(|i| ((i * i) % 5) as i32).collect();
    let z32 = Tensor::<f32>::zeros(&dev, &[4]).unwrap();
    let z64 = Tensor::<f64>::zeros(&dev, &[4]).unwrap();
    let z16 = Tensor::<f16>::zeros(&dev, &[4]).unwrap();
    let zb16 = Tensor::<bf16>::zeros(&dev, &[4]).unwrap();
    let hist = Tensor::<i32>::zeros(&dev, &[5]).unwrap();
    let cu = Tensor::<u32>::zeros(&dev, &[4]).unwrap();
    let cl = Tensor::<i64>::from_vec(&dev, &[4], vec![-1; 4]).unwrap();
    let x = Tensor::from_vec(&dev, &[n], xs.clone()).unwrap();
    let b = Tensor::from_vec(&dev, &[n], bins.clone()).unwrap();
    atomic_sums::launch((n.div_ceil(64),), &x, &b, &z32, &z64, &z16, &zb16, &hist, &cu, &cl, n as i32, 64).unwrap();
    let mut want = [0f64; 4];
    let mut count = [0u32; 4];
    for (i, v) in xs.iter().enumerate() {
        want[i % 4] += *v as f64;
        count[i % 4] += 1;
    }
    let mut want_hist = [0i32; 5];
    for b in &bins {
        want_hist[*b as usize] += 1;
    }
    assert_eq!(z32.to_vec(), want.map(|w| w as f32).to_vec());
    assert_eq!(z64.to_vec(), want.to_vec());
    assert_eq!(z16.to_vec(), want.map(f16::from_f64).to_vec());
    assert_eq!(zb16.to_vec(), want.map(bf16::from_f64).to_vec());
    assert_eq!(hist.to_vec(), want_hist.to_vec());
    assert_eq!(cu.to_vec(), count.to_vec());
    assert_eq!(cl.to_vec(), count.map(|c| 3 * c as i64 - 1).to_vec());
}

#[test]
fn extrema_and_bitwise_operations() {
    let dev = test_device();
    let n = 200usize;
    let xs: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 * 0.25 - 12.0).collect();
    let bits: Vec<i32> = (0..n).map(|i| ((i as i32 * 2_654_435) ^ 0x5a5a) & 0x7fff_ffff).collect();
    let t = |v: f32| Tensor::<f32>::from_vec(&dev, &[1], vec![v]).unwrap();
    let (fmax, hmin) = (t(f32::NEG_INFINITY), Tensor::<f16>::from_vec(&dev, &[1], vec![f16::INFINITY]).unwrap());
    let imax = Tensor::<i32>::from_vec(&dev, &[1], vec![i32::MIN]).unwrap();
    let umin = Tensor::<u32>::from_vec(&dev, &[1], vec![u32::MAX]).unwrap();
    let lmax = Tensor::<i64>::from_vec(&dev, &[1], vec![i64::MIN]).unwrap();
    let ors = Tensor::<i32>::zeros(&dev, &[1]).unwrap();
    let ands = Tensor::<u32>::from_vec(&dev, &[1], vec![u32::MAX]).unwrap();
    let xors = Tensor::<i64>::from_vec(&dev, &[1], vec![0x1234]).unwrap();
    let x = Tensor::from_vec(&dev, &[n], xs.clone()).unwrap();
    let b = Tensor::from_vec(&dev, &[n], bits.clone()).unwrap();
    atomic_extrema_bits::launch((n.div_ceil(32),), &x, &b, &fmax, &hmin, &imax, &umin, &lmax, &ors, &ands, &xors, n as i32, 32).unwrap();
    let fm = xs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let hm = xs.iter().map(|v| f16::from_f32(*v)).fold(f16::INFINITY, |a, b| if b < a { b } else { a });
    assert_eq!((fmax.to_vec()[0], hmin.to_vec()[0]), (fm, hm));
    assert_eq!(imax.to_vec()[0], *bits.iter().max().unwrap());
    assert_eq!(umin.to_vec()[0], bits.iter().map(|b| *b as u32).min().unwrap());
    assert_eq!(lmax.to_vec()[0], bits.iter().map(|b| *b as i64 * -3).max().unwrap());
    assert_eq!(ors.to_vec()[0], bits.iter().fold(0, |a, b| a | b));
    assert_eq!(ands.to_vec()[0], bits.iter().fold(u32::MAX, |a, b| a & (*b as u32 | 1)));
    assert_eq!(xors.to_vec()[0], bits.iter().fold(0x1234i64, |a, b| a ^ *b as i64));
}

#[test]
fn old_values_are_tickets_claims_and_swaps() {
    let dev = test_device();
    let programs = 64usize;
    let b = 16usize;
    let zeros = |len: usize| Tensor::<i32>::zeros(&dev, &[len]).unwrap();
    let (counter, lane_counter, tickets, lane_tickets) = (zeros(1), zeros(2), zeros(programs), zeros(programs * b));
    let (claims, seen, last, swapped) = (zeros(4), zeros(programs), zeros(1), zeros(programs));
    atomic_tickets::launch((programs,), &counter, &lane_counter, &tickets, &lane_tickets, &claims, &seen, &last, &swapped, 16).unwrap();
    // One ticket per program (not one per thread): a permutation of 0..programs.
    let mut t = tickets.to_vec();
    t.sort();
    assert_eq!(t, (0..programs as i32).collect::<Vec<_>>());
    assert_eq!(counter.to_vec(), vec![programs as i32]);
    // One ticket per lane from each of the two per-slot counters.
    let lt = lane_tickets.to_vec();
    for slot in 0..2 {
        let mut mine: Vec<i32> = (0..programs * b).filter(|i| i % 2 == slot).map(|i| lt[i]).collect();
        mine.sort();
        assert_eq!(mine, (0..(programs * b / 2) as i32).collect::<Vec<_>>(), "slot {slot}");
    }
    // Exactly one program claimed each slot (it saw 0); the others saw the winner's id.
    let (claims, seen) = (claims.to_vec(), seen.to_vec());
    for slot in 0..4 {
        let winner = claims[slot];
        assert!(winner >= 1 && (winner - 1) as usize % 4 == slot, "slot {slot} claimed by {winner}");
        for pid in (slot..programs).step_by(4) {
            let want = if pid as i32 + 1 == winner { 0 } else { winner };
            assert_eq!(seen[pid], want, "program {pid} at slot {slot}");
        }
    }
    // The exchanges form one chain: every id but the last one is swapped out exactly once.
    let mut got = swapped.to_vec();
    got.push(last.to_vec()[0]);
    got.sort();
    assert_eq!(got, (0..=programs as i32).collect::<Vec<_>>());
}

#[test]
fn a_lock_taken_with_atomic_cas_in_a_while_loop_serializes_programs() {
    use tests::atomics::locked_accumulate;
    let dev = test_device();
    let (programs, n) = (48usize, 50usize);
    let xs: Vec<f32> = (0..programs * n).map(|i| ((i * 5) % 17) as f32).collect();
    let acc = Tensor::<f32>::full(&dev, &[n], -99.0).unwrap();
    let (lock, count) = (Tensor::<i32>::zeros(&dev, &[1]).unwrap(), Tensor::<i32>::zeros(&dev, &[1]).unwrap());
    locked_accumulate::launch((programs,), &Tensor::from_vec(&dev, &[programs * n], xs.clone()).unwrap(), &acc, &lock, &count, n as i32, 64).unwrap();
    let want: Vec<f32> = (0..n).map(|c| (0..programs).map(|p| xs[p * n + c]).sum()).collect();
    assert_eq!(acc.to_vec(), want);
    assert_eq!((lock.to_vec(), count.to_vec()), (vec![0], vec![programs as i32]));
}
