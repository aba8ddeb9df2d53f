//! The fuzzing loop (pick a seed, a pool mutant or a generated kernel; mutate; run; keep clean
//! mutants), its statistics, and the greedy reduction of a failing input.

use super::grammar::gen_kernel;
use super::harness::*;
use super::mutate::*;
use super::vocab::Rng;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

#[derive(Default, Debug)]
pub(super) struct Stats {
    pub(super) tried: u64,
    pub(super) rejected: u64,
    pub(super) no_entry: u64,
    pub(super) expanded_ok: u64,
    pub(super) expanded_errors: u64,
    pub(super) parser_panics: u64,
    /// Clean expansions not re-parsed (larger than `MAX_CHECKED_TOKENS`).
    pub(super) unchecked: u64,
    /// Distinct bugs: (panic location or message, first input, count).
    pub(super) bugs: Vec<(String, String, u64)>,
    pub(super) slowest: (Duration, String),
    pub(super) elapsed: Duration,
}

impl Stats {
    pub(super) fn reached(&self) -> u64 {
        self.expanded_ok + self.expanded_errors + self.bugs.iter().map(|b| b.2).sum::<u64>()
    }

    pub(super) fn record(&mut self, src: &str, outcome: Outcome, took: Duration) {
        self.tried += 1;
        if took > self.slowest.0 {
            self.slowest = (took, src.to_string());
        }
        match outcome {
            Outcome::Rejected => self.rejected += 1,
            Outcome::NoEntry => self.no_entry += 1,
            Outcome::Expanded { errors: false } => self.expanded_ok += 1,
            Outcome::Expanded { errors: true } => self.expanded_errors += 1,
            Outcome::ParserPanic(_) => self.parser_panics += 1,
            Outcome::Panicked(m) | Outcome::InvalidOutput(m) => {
                let key = bug_key(&m);
                match self.bugs.iter_mut().find(|b| bug_key(&b.0) == key) {
                    Some(b) => b.2 += 1,
                    None => self.bugs.push((m, src.to_string(), 1)),
                }
            }
        }
    }

    pub(super) fn merge(&mut self, o: Stats) {
        self.tried += o.tried;
        self.rejected += o.rejected;
        self.no_entry += o.no_entry;
        self.expanded_ok += o.expanded_ok;
        self.expanded_errors += o.expanded_errors;
        self.parser_panics += o.parser_panics;
        self.unchecked += o.unchecked;
        for b in o.bugs {
            match self.bugs.iter_mut().find(|x| bug_key(&x.0) == bug_key(&b.0)) {
                Some(x) => x.2 += b.2,
                None => self.bugs.push(b),
            }
        }
        if o.slowest.0 > self.slowest.0 {
            self.slowest = o.slowest;
        }
        self.elapsed = self.elapsed.max(o.elapsed);
    }

    pub(super) fn summary(&self) -> String {
        let pct = |x: u64| if self.tried == 0 { 0.0 } else { 100.0 * x as f64 / self.tried as f64 };
        format!(
            "{} inputs in {:.1?} ({:.0}/s): {} rejected by syn ({:.1}%), {} parsed without a kernel entry point ({:.1}%), \
             {} reached the macro ({:.1}%: {} expanded cleanly, {} with compile errors), {} distinct bug(s), \
             {} lexer/syn panic(s); {} clean expansions too large to re-parse; slowest input {:.1?}",
            self.tried,
            self.elapsed,
            self.tried as f64 / self.elapsed.as_secs_f64().max(1e-9),
            self.rejected,
            pct(self.rejected),
            self.no_entry,
            pct(self.no_entry),
            self.reached(),
            pct(self.reached()),
            self.expanded_ok,
            self.expanded_errors,
            self.bugs.len(),
            self.parser_panics,
            self.unchecked,
            self.slowest.0,
        )
    }
}

/// Groups panics by location (`at file:line`), or by message for invalid outputs.
pub(super) fn bug_key(msg: &str) -> String {
    match msg.rfind("(at ") {
        Some(i) => msg[i..].to_string(),
        None => msg.chars().take(60).collect(),
    }
}

/// Fuzzes `iters` inputs (or until `deadline`) from `seed`, mutating `seeds` (sources).
pub(super) fn fuzz(iters: u64, seed: u64, seeds: &[String], deadline: Option<Instant>, progress: bool) -> Stats {
    let mut rng = Rng::new(seed);
    let seeds: Vec<&str> = seeds.iter().map(String::as_str).collect();
    let start = Instant::now();
    let unchecked_before = UNCHECKED.with(|u| u.get());
    let mut stats = Stats::default();
    // Mutants that expanded cleanly: valid kernels that reach every backend.
    let mut pool: Vec<String> = Vec::new();
    const POOL: usize = 256;
    const MAX_LEN: usize = 24_000;
    for it in 0..iters {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let mut src = match rng.below(20) {
            0..=8 => rng.pick(&seeds).to_string(),
            9..=15 if !pool.is_empty() => rng.pick(&pool).clone(),
            _ => gen_kernel(&mut rng),
        };
        let rounds = {
            let mut n = 1;
            while n < 8 && rng.chance(45) {
                n += 1;
            }
            n
        };
        for _ in 0..rounds {
            // A panic of proc_macro2 or syn while mutating only loses this mutation.
            let mutated = guarded(|| match rng.below(20) {
                k @ 0..=11 => {
                    let mut t = parse_toks(&src);
                    let mut names = Vec::new();
                    idents_of(&t, &mut names);
                    mutate_tokens(&mut rng, &mut t, &names, &seeds, k >= 9);
                    Some(stream(&t).to_string())
                }
                _ => mutate_syntax(&mut rng, &src),
            });
            if let Ok(Some(s)) = mutated {
                src = s;
            }
        }
        if src.len() > MAX_LEN {
            continue;
        }
        let t0 = Instant::now();
        let outcome = run_source(&src);
        let took = t0.elapsed();
        if outcome == (Outcome::Expanded { errors: false }) {
            if pool.len() < POOL {
                pool.push(src.clone());
            } else {
                let i = rng.below(POOL);
                pool[i] = src.clone();
            }
        }
        if outcome.is_bug() && progress {
            println!("fuzz: bug at input {it}: {outcome:?}\n{src}\n");
        }
        stats.record(&src, outcome, took);
        if progress && (it + 1) % 50_000 == 0 {
            println!(
                "fuzz[{seed}]: {} inputs ({} rejected by syn, {} reached the macro), {} bugs, {:.0?}",
                it + 1,
                stats.rejected,
                stats.reached(),
                stats.bugs.len(),
                start.elapsed()
            );
        }
    }
    stats.elapsed = start.elapsed();
    stats.unchecked = UNCHECKED.with(|u| u.get()) - unchecked_before;
    stats
}

/// Greedy token-level reduction of `src` while it still fails with the same bug.
pub(super) fn reduce(src: &str, budget: usize) -> String {
    let key = match run_source(src) {
        o @ (Outcome::Panicked(_) | Outcome::InvalidOutput(_)) => bug_key(&format!("{o:?}")),
        _ => return src.to_string(),
    };
    let same = |t: &[Tok]| -> bool {
        match run_source(&stream(t).to_string()) {
            o @ (Outcome::Panicked(_) | Outcome::InvalidOutput(_)) => bug_key(&format!("{o:?}")) == key,
            _ => false,
        }
    };
    let mut best = parse_toks(src);
    let mut runs = 0;
    let mut progress = true;
    while progress && runs < budget {
        progress = false;
        let mut all = Vec::new();
        lists(&best, &mut vec![], false, false, &mut all);
        for path in all {
            let mut chunk = path_valid(&mut best.clone(), &path).map_or(0, |l| l.len());
            while chunk >= 1 && runs < budget {
                let mut i = 0;
                loop {
                    let mut cand = best.clone();
                    let Some(list) = path_valid(&mut cand, &path) else { break };
                    if i >= list.len() {
                        break;
                    }
                    let end = (i + chunk).min(list.len());
                    list.drain(i..end);
                    runs += 1;
                    if same(&cand) {
                        best = cand;
                        progress = true;
                    } else {
                        i += chunk;
                    }
                    if runs >= budget {
                        break;
                    }
                }
                chunk /= 2;
            }
        }
    }
    stream(&best).to_string()
}

/// `list_at` for a path that may no longer exist after reductions.
pub(super) fn path_valid<'a>(v: &'a mut Vec<Tok>, path: &[usize]) -> Option<&'a mut Vec<Tok>> {
    match path.split_first() {
        None => Some(v),
        Some((i, rest)) => match v.get_mut(*i)? {
            Tok::Group(_, inner) => path_valid(inner, rest),
            Tok::Leaf(_) => None,
        },
    }
}

pub(super) fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.replace('_', "").parse().ok()).unwrap_or(default)
}

pub(super) fn report_bugs(stats: &Stats, reduce_budget: usize) -> String {
    let mut out = String::new();
    for (msg, src, n) in &stats.bugs {
        let small = reduce(src, reduce_budget);
        let _ = writeln!(out, "BUG ({n} inputs): {msg}\n  input:   {src}\n  reduced: {small}\n");
    }
    out
}
