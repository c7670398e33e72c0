//! The `malleable` suite's pure side: which reconfigurations it runs,
//! the line `onesided-mam-time` prints for each, and how rounds of them
//! become table rows.
//!
//! Each run is one job (`osrun -n NS --standby 3 onesided-mam-time --to
//! NT`): a block-distributed constant array of 2^22 `f64` (times
//! `--scale`) moves from NS to NT processes. Rows, the median over
//! rounds: `NS->NT spawn` (spawn + join, over the methods' blocking runs
//! of a growth), `NS->NT METHOD` (the blocking redistribution) and
//! `NS->NT METHOD STRATEGY` (a background one, with omega: the iteration
//! time during it over without, and the iterations it overlapped). The
//! MPICH peer of this suite comes with the malleability study (issue 26):
//! until then its rows have no peer column.

use std::collections::BTreeMap;

use crate::driver::median;
use crate::report::Row;

/// The suite's name.
pub const SUITE: &str = "malleable";

/// (NS, NT) pairs: growths, shrinks, and a reconfiguration that keeps
/// the count.
pub const PAIRS: [(u32, u32); 9] = [
    (1, 2),
    (2, 1),
    (2, 3),
    (3, 2),
    (1, 4),
    (4, 1),
    (2, 4),
    (4, 2),
    (3, 3),
];

/// The methods, by their `ONESIDED_MAM_METHOD` names.
pub const METHODS: [&str; 3] = ["col", "rma_lock", "rma_lock_all"];

/// The strategies, blocking first.
pub const STRATEGIES: [&str; 4] = ["blocking", "thread", "nonblocking", "wait_targets"];

/// Elements of the array at `--scale 1`.
pub const LEN: u64 = 1 << 22;

/// Standby processes `osrun` starts for the runs (the most any growth
/// of [`PAIRS`] spawns).
pub const STANDBY: u32 = 3;

/// One run: a reconfiguration from `ns` to `nt` processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Run {
    /// Processes before.
    pub ns: u32,
    /// Processes after.
    pub nt: u32,
    /// One of [`METHODS`].
    pub method: &'static str,
    /// One of [`STRATEGIES`].
    pub strategy: &'static str,
}

/// Every run of a round: each pair by each method and strategy.
pub fn runs() -> Vec<Run> {
    let mut runs = Vec::new();
    for (ns, nt) in PAIRS {
        for strategy in STRATEGIES {
            for method in METHODS {
                runs.push(Run {
                    ns,
                    nt,
                    method,
                    strategy,
                });
            }
        }
    }
    runs
}

/// What one run measured (the most over its processes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// Spawn and join, ms.
    pub spawn_ms: f64,
    /// The redistribution, ms.
    pub redistribution_ms: f64,
    /// Iterations made while it was pending.
    pub iterations: u32,
    /// Iteration time during it over without.
    pub omega: f64,
}

/// Parses `onesided-mam-time`'s line, `NS -> NT METHOD STRATEGY spawn X
/// ms redistribution Y ms iterations N omega W`; `None` for any other.
pub fn parse(line: &str) -> Option<Timed> {
    let f: Vec<&str> = line.split_whitespace().collect();
    match f.as_slice() {
        [_, "->", _, _, _, "spawn", spawn, "ms", "redistribution", moved, "ms", "iterations", n, "omega", omega] => {
            Some(Timed {
                spawn_ms: spawn.parse().ok()?,
                redistribution_ms: moved.parse().ok()?,
                iterations: n.parse().ok()?,
                omega: omega.parse().ok()?,
            })
        }
        _ => None,
    }
}

/// The rows of `rounds` (each run's results, one per round), in the
/// order of [`runs`].
pub fn rows(rounds: &BTreeMap<Run, Vec<Timed>>, provider: &str) -> Vec<Row> {
    let row = |ranks: u32, series: String, ms: f64| Row {
        suite: SUITE.to_string(),
        series,
        bytes: 0,
        ranks,
        provider: provider.to_string(),
        onesided_us: ms * 1e3,
        peer_us: f64::NAN,
        speedup: f64::NAN,
        algorithm: None,
        omega: None,
        iterations: None,
        master_load: None,
    };
    let mut out = Vec::new();
    for (ns, nt) in PAIRS {
        let ranks = ns.max(nt);
        let of = |strategy: &'static str, method: &'static str| {
            let run = Run {
                ns,
                nt,
                method,
                strategy,
            };
            rounds.get(&run).filter(|t| !t.is_empty())
        };
        if nt > ns {
            let spawns: Vec<f64> = (METHODS.iter())
                .filter_map(|&m| of("blocking", m))
                .flatten()
                .map(|t| t.spawn_ms)
                .collect();
            if let Some(ms) = median(&spawns) {
                out.push(row(ranks, format!("{ns}->{nt} spawn"), ms));
            }
        }
        for strategy in STRATEGIES {
            for method in METHODS {
                let Some(timed) = of(strategy, method) else {
                    continue;
                };
                let pick = |f: fn(&Timed) -> f64| median(&timed.iter().map(f).collect::<Vec<_>>());
                let Some(ms) = pick(|t| t.redistribution_ms) else {
                    continue;
                };
                let mut r = match strategy {
                    "blocking" => row(ranks, format!("{ns}->{nt} {method}"), ms),
                    _ => row(ranks, format!("{ns}->{nt} {method} {strategy}"), ms),
                };
                if strategy != "blocking" {
                    r.omega = pick(|t| t.omega);
                    r.iterations = pick(|t| f64::from(t.iterations));
                }
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_by_every_method_and_strategy() {
        let runs = runs();
        assert_eq!(runs.len(), PAIRS.len() * METHODS.len() * STRATEGIES.len());
        assert!(runs.iter().all(|r| r.ns.max(r.nt) <= 4));
        let growths = PAIRS.iter().map(|(ns, nt)| nt.saturating_sub(*ns));
        assert_eq!(growths.max(), Some(STANDBY));
    }

    #[test]
    fn lines_parse() {
        let line = "2 -> 4 rma_lock_all thread spawn 17.8 ms redistribution 21.0 ms iterations 12 omega 1.05";
        assert_eq!(
            parse(line),
            Some(Timed {
                spawn_ms: 17.8,
                redistribution_ms: 21.0,
                iterations: 12,
                omega: 1.05
            })
        );
        assert_eq!(parse("pid 0 123"), None);
        assert_eq!(parse(&line.replace("12", "x")), None);
    }

    #[test]
    fn rows_are_medians_with_spawns_for_growths() {
        let timed = |spawn_ms, redistribution_ms, omega| Timed {
            spawn_ms,
            redistribution_ms,
            iterations: 3,
            omega,
        };
        let mut rounds = BTreeMap::new();
        for run in runs().into_iter().filter(|r| (r.ns, r.nt) == (2, 4)) {
            let t = vec![
                timed(10.0, 20.0, 1.0),
                timed(30.0, 40.0, 1.2),
                timed(20.0, 30.0, 1.1),
            ];
            rounds.insert(run, t);
        }
        rounds.insert(
            Run {
                ns: 4,
                nt: 2,
                method: "col",
                strategy: "blocking",
            },
            vec![timed(0.0, 5.0, 1.0)],
        );
        let rows = rows(&rounds, "shm");
        let names: Vec<&str> = rows.iter().map(|r| r.series.as_str()).collect();
        assert_eq!(names.len(), 1 + 12 + 1, "{names:?}");
        assert_eq!(names[0], "2->4 spawn");
        assert_eq!(names[1], "2->4 col");
        assert_eq!(names[4], "2->4 col thread");
        assert_eq!(names[13], "4->2 col");
        assert_eq!(rows[0].onesided_us, 20e3);
        assert_eq!(rows[1].onesided_us, 30e3);
        assert_eq!(rows[1].omega, None);
        assert_eq!(rows[4].omega, Some(1.1));
        assert_eq!(rows[4].iterations, Some(3.0));
        assert!(rows.iter().all(|r| r.ranks == 4 && r.peer_us.is_nan()));
    }
}
