//! The `malleable` suite's pure side: the malleability study's runs of
//! `sam` and of its MPICH peer, the JSON line each prints, and how rounds
//! of them become table rows and the study's figures.
//!
//! Each run is one job of each side: `osrun -n NS --standby 2 sam
//! FILE.toml` ([`sam_file`]) and `mpiexec -n NS malleable ARGS`
//! ([`peer_args`]), a CG of [`grid`] `x` [`grid`] rows (about 32 MiB
//! registered at `--scale 1`) reconfigured from NS to NT processes at
//! iteration [`BEFORE`], iterating meanwhile up to [`OVERLAP`] times.
//! Rows, each side's median over rounds ([`rows`]):
//! - `NS->NT spawn` (growths): spawn and join, over the blocking runs;
//! - `NS->NT METHOD reconfiguration` (growths): spawn plus the blocking
//!   redistribution, the whole stop of the application;
//! - `NS->NT METHOD`: T_redis, blocking;
//! - `NS->NT METHOD STRATEGY`: T_redis in the background, which is the
//!   study's total of equation 2, with omega and N_it of both sides;
//! - `NS->NT METHOD eq1`: the blocking total of equation 1, T_redis
//!   blocking + T_it(NT) times the fewest iterations any background
//!   variant of the pair overlapped (on that side).
//!
//! A case whose processes outnumber the cores ends in `*`. The speedup
//! is the ratio of the two sides' medians.

use std::collections::BTreeMap;

use crate::driver::median;
use crate::report::{Bars, Overlap, Row};
use crate::sam::ROW;

/// The suite's name.
pub const SUITE: &str = "malleable";

/// (NS, NT) pairs, the study's shapes at this machine's size.
pub const PAIRS: [(u32, u32); 6] = [(1, 2), (2, 1), (2, 3), (3, 2), (2, 4), (4, 2)];

/// The methods, by their names in `sam`'s file and the peer's arguments.
pub const METHODS: [&str; 3] = ["col", "rma_lock", "rma_lock_all"];

/// The strategies, blocking first.
pub const STRATEGIES: [&str; 4] = ["blocking", "thread", "nonblocking", "wait_targets"];

/// Standby processes `osrun` starts for `sam` (the most any growth of
/// [`PAIRS`] spawns): the peer's `MPI_Comm_spawn` has none, and onesided
/// without them pays libfabric's start in each spawned process.
pub const STANDBY: u32 = 2;

/// Iterations before the reconfiguration.
pub const BEFORE: u32 = 10;

/// The overlap budget: iterations at most while a move is pending.
pub const OVERLAP: u32 = 40;

/// Iterations in all (the budget can be spent, and some follow).
pub const ITERATIONS: u32 = BEFORE + OVERLAP + 10;

/// Registered bytes at `--scale 1`.
pub const BYTES: f64 = (32 << 20) as f64;

/// Registered bytes per row: the matrix's values (f64) and columns
/// (u32), 5 each, and x, r, p.
pub const ROW_BYTES: f64 = (ROW * (8 + 4) + 3 * 8) as f64;

/// Grid points per side for `scale` times [`BYTES`] (at least 4).
pub fn grid(scale: f64) -> u32 {
    ((BYTES * scale / ROW_BYTES).sqrt().round() as u32).max(4)
}

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

/// `sam`'s file for `run` on a `grid` x `grid` problem.
pub fn sam_file(run: &Run, grid: u32) -> String {
    format!(
        "grid = {grid}\nbefore = {BEFORE}\noverlap = {OVERLAP}\niterations = {ITERATIONS}\n\
         ns = {}\nnt = {}\nmethod = \"{}\"\nstrategy = \"{}\"\n",
        run.ns, run.nt, run.method, run.strategy
    )
}

/// The peer's arguments for `run`: `GRID BEFORE OVERLAP ITERATIONS NT
/// METHOD STRATEGY`.
pub fn peer_args(run: &Run, grid: u32) -> Vec<String> {
    let numbers = [grid, BEFORE, OVERLAP, ITERATIONS, run.nt];
    (numbers.iter().map(u32::to_string))
        .chain([run.method.to_string(), run.strategy.to_string()])
        .collect()
}

/// What one run of a side measured (the most over its processes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// Spawn and join, ms.
    pub spawn_ms: f64,
    /// T_redis: the redistribution's start to its end, ms.
    pub redis_ms: f64,
    /// An iteration on the targets after it, ms.
    pub it_after_ms: f64,
    /// Iteration time during it over before.
    pub omega: f64,
    /// Iterations made while it was pending.
    pub n_it: f64,
}

/// Parses the JSON line `sam` and the peer print; `None` for any other
/// line.
pub fn parse(line: &str) -> Option<Timed> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let f = |key: &str| v.get(key)?.as_f64();
    Some(Timed {
        spawn_ms: f("spawn_ms")?,
        redis_ms: f("redis_ms")?,
        it_after_ms: f("it_after_ms")?,
        omega: f("omega")?,
        n_it: f("n_it")?,
    })
}

/// The sides, in the order of [`Results`]' pairs.
pub const SIDES: [&str; 2] = ["onesided", "MPICH"];

/// Each run's measurements, one per round: onesided's, the peer's.
pub type Results = BTreeMap<Run, [Vec<Timed>; 2]>;

/// A side's median of `f` over the rounds of `run`.
fn median_of(results: &Results, run: Run, side: usize, f: impl Fn(&Timed) -> f64) -> Option<f64> {
    let timed = &results.get(&run)?[side];
    median(&timed.iter().map(f).collect::<Vec<_>>())
}

fn run(ns: u32, nt: u32, method: &'static str, strategy: &'static str) -> Run {
    Run {
        ns,
        nt,
        method,
        strategy,
    }
}

/// Equation 1 on a side: T_redis blocking of `method` plus T_it(NT)
/// (after the blocking run) times the fewest iterations any background
/// variant of the pair overlapped.
fn equation1(
    results: &Results,
    (ns, nt): (u32, u32),
    method: &'static str,
    side: usize,
) -> Option<f64> {
    let blocking = run(ns, nt, method, "blocking");
    let redis = median_of(results, blocking, side, |t| t.redis_ms)?;
    let it = median_of(results, blocking, side, |t| t.it_after_ms)?;
    let fewest = (STRATEGIES[1..].iter())
        .flat_map(|&s| METHODS.map(|m| median_of(results, run(ns, nt, m, s), side, |t| t.n_it)))
        .flatten()
        .reduce(f64::min)?;
    Some(redis + it * fewest)
}

/// The rows of `results`, pair by pair ([`PAIRS`]); a case whose
/// processes outnumber `cores` ends in `*`.
pub fn rows(results: &Results, provider: &str, cores: u32) -> Vec<Row> {
    let mut out = Vec::new();
    for (ns, nt) in PAIRS {
        let ranks = ns.max(nt);
        let mark = if ranks > cores { "*" } else { "" };
        let mut push = |series: String, sides: [Option<f64>; 2], overlap: Option<Overlap>| {
            if sides.iter().all(Option::is_none) {
                return;
            }
            let [ours, theirs] = sides.map(|ms| ms.map_or(f64::NAN, |ms| ms * 1e3));
            out.push(Row {
                suite: SUITE.to_string(),
                series: format!("{series}{mark}"),
                bytes: 0,
                ranks,
                provider: provider.to_string(),
                onesided_us: ours,
                peer_us: theirs,
                speedup: crate::report::speedup(ours, theirs),
                algorithm: None,
                overlap,
                master_load: None,
                note: None,
            });
        };
        let both = |r: Run, f: fn(&Timed) -> f64| [0, 1].map(|side| median_of(results, r, side, f));
        if nt > ns {
            let spawns = [0, 1].map(|side| {
                let all: Vec<f64> = (METHODS.iter())
                    .filter_map(|&m| results.get(&run(ns, nt, m, "blocking")))
                    .flat_map(|sides| sides[side].iter().map(|t| t.spawn_ms))
                    .collect();
                median(&all)
            });
            push(format!("{ns}->{nt} spawn"), spawns, None);
            for method in METHODS {
                let whole = both(run(ns, nt, method, "blocking"), |t| t.spawn_ms + t.redis_ms);
                push(format!("{ns}->{nt} {method} reconfiguration"), whole, None);
            }
        }
        for method in METHODS {
            let blocking = both(run(ns, nt, method, "blocking"), |t| t.redis_ms);
            push(format!("{ns}->{nt} {method}"), blocking, None);
            let eq1 = [0, 1].map(|side| equation1(results, (ns, nt), method, side));
            push(format!("{ns}->{nt} {method} eq1"), eq1, None);
        }
        for strategy in &STRATEGIES[1..] {
            for method in METHODS {
                let r = run(ns, nt, method, strategy);
                let nan = |v: [Option<f64>; 2]| v.map(|v| v.unwrap_or(f64::NAN));
                let overlap = Overlap {
                    omega: nan(both(r, |t| t.omega)),
                    iterations: nan(both(r, |t| t.n_it)),
                };
                let series = format!("{ns}->{nt} {method} {strategy}");
                push(series, both(r, |t| t.redis_ms), Some(overlap));
            }
        }
    }
    out
}

/// The study's figures for `results`, both sides: blocking T_redis per
/// pair and method (its figure 5), omega per method and strategy
/// (figures 6 and 7, one a side), the iterations overlapped (figure 8,
/// one a side) and the totals of equations 1 and 2 (figure 9, one a
/// side). `context` ends each title ("(shm, AMD EPYC, 2 cores)").
pub fn figures(results: &Results, context: &str, cores: u32) -> Vec<Bars> {
    let groups: Vec<String> = (PAIRS.iter())
        .map(|&(ns, nt)| {
            let mark = if ns.max(nt) > cores { "*" } else { "" };
            format!("{ns}->{nt}{mark}")
        })
        .collect();
    let over_pairs = |f: &dyn Fn((u32, u32)) -> Option<f64>| PAIRS.iter().map(|&p| f(p)).collect();
    let mut figures = Vec::new();
    let blocking = (0..2)
        .flat_map(|side| {
            METHODS.map(|m| {
                let f =
                    |(ns, nt)| median_of(results, run(ns, nt, m, "blocking"), side, |t| t.redis_ms);
                (format!("{} {m}", SIDES[side]), over_pairs(&f))
            })
        })
        .collect();
    figures.push(Bars {
        name: "fig5-blocking".into(),
        title: format!("Blocking redistribution time per pair and method {context}"),
        y_desc: "T_redis (ms)".into(),
        log: true,
        groups: groups.clone(),
        series: blocking,
    });
    let background = |side: usize, f: fn(&Timed) -> f64| -> Vec<(String, Vec<Option<f64>>)> {
        (STRATEGIES[1..].iter())
            .flat_map(|&s| {
                METHODS.map(|m| {
                    let g = |(ns, nt)| median_of(results, run(ns, nt, m, s), side, f);
                    (format!("{m} {s}"), over_pairs(&g))
                })
            })
            .collect()
    };
    for (side, number) in [(0, 6), (1, 7)] {
        figures.push(Bars {
            name: format!("fig{number}-omega-{}", SIDES[side].to_lowercase()),
            title: format!("{}: omega per method and strategy {context}", SIDES[side]),
            y_desc: "omega (iteration time during / before)".into(),
            log: true,
            groups: groups.clone(),
            series: background(side, |t| t.omega),
        });
    }
    for (side, name) in SIDES.iter().enumerate() {
        figures.push(Bars {
            name: format!("fig8-iterations-{}", name.to_lowercase()),
            title: format!("{name}: iterations overlapped {context}"),
            y_desc: "N_it".into(),
            log: false,
            groups: groups.clone(),
            series: background(side, |t| t.n_it),
        });
    }
    for (side, name) in SIDES.iter().enumerate() {
        let mut series: Vec<(String, Vec<Option<f64>>)> = METHODS
            .map(|m| {
                let f = |pair| equation1(results, pair, m, side);
                (format!("{m} eq.1 blocking"), over_pairs(&f))
            })
            .into();
        series.extend(background(side, |t| t.redis_ms));
        figures.push(Bars {
            name: format!("fig9-totals-{}", name.to_lowercase()),
            title: format!("{name}: totals, eq. 1 (blocking) and eq. 2 (background) {context}"),
            y_desc: "total (ms)".into(),
            log: true,
            groups: groups.clone(),
            series,
        });
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(spawn_ms: f64, redis_ms: f64, omega: f64, n_it: f64) -> Timed {
        Timed {
            spawn_ms,
            redis_ms,
            it_after_ms: 2.0,
            omega,
            n_it,
        }
    }

    #[test]
    fn every_pair_by_every_method_and_strategy() {
        let runs = runs();
        assert_eq!(runs.len(), PAIRS.len() * METHODS.len() * STRATEGIES.len());
        assert!(runs.iter().all(|r| r.ns.max(r.nt) <= 4));
        let growths = PAIRS.iter().map(|(ns, nt)| nt.saturating_sub(*ns));
        assert_eq!(growths.max(), Some(STANDBY));
    }

    #[test]
    fn the_default_problem_registers_about_32_mib() {
        let g = f64::from(grid(1.0));
        let bytes = g * g * ROW_BYTES;
        assert!((bytes / BYTES - 1.0).abs() < 0.01, "{bytes}");
        assert_eq!(grid(1e-9), 4);
        assert!(grid(0.25) < grid(1.0));
    }

    #[test]
    fn both_sides_get_the_same_problem() {
        let r = run(2, 3, "rma_lock_all", "wait_targets");
        let file = sam_file(&r, 632);
        let config: crate::sam::Config = toml::from_str(&file).unwrap();
        assert_eq!((config.grid, config.ns, config.nt), (632, 2, 3));
        assert_eq!(
            (config.before, config.overlap, config.iterations),
            (BEFORE, OVERLAP, ITERATIONS)
        );
        assert_eq!(
            (config.method.as_str(), config.strategy.as_str()),
            (r.method, r.strategy)
        );
        assert_eq!(
            peer_args(&r, 632),
            ["632", "10", "40", "60", "3", "rma_lock_all", "wait_targets"]
        );
    }

    #[test]
    fn lines_parse() {
        let line = r#"{"ns":2,"nt":3,"method":"col","strategy":"thread","rows":16,"spawn_ms":70.3,"redis_ms":29.2,"redis_background_ms":13.2,"redis_end_ms":16.0,"it_before_ms":2.1,"it_during_ms":2.5,"it_after_ms":1.4,"omega":1.19,"n_it":3,"residual":7799.4,"reference":7799.4}"#;
        assert_eq!(
            parse(line),
            Some(Timed {
                spawn_ms: 70.3,
                redis_ms: 29.2,
                it_after_ms: 1.4,
                omega: 1.19,
                n_it: 3.0
            })
        );
        assert_eq!(parse("loaded mpich 5.0.2"), None);
        assert_eq!(parse(&line.replace("\"omega\"", "\"o\"")), None);
    }

    #[test]
    fn rows_are_medians_of_both_sides_with_totals() {
        let mut results = Results::new();
        for r in runs().into_iter().filter(|r| (r.ns, r.nt) == (2, 3)) {
            let ours = vec![
                timed(10.0, 20.0, 1.0, 4.0),
                timed(30.0, 40.0, 1.2, 2.0),
                timed(20.0, 30.0, 1.1, 3.0),
            ];
            let n = if r.strategy == "wait_targets" {
                5.0
            } else {
                9.0
            };
            results.insert(r, [ours, vec![timed(80.0, 60.0, 4.0, n)]]);
        }
        let rows = rows(&results, "shm", 2);
        let names: Vec<&str> = rows.iter().map(|r| r.series.as_str()).collect();
        assert_eq!(names.len(), 1 + 3 + 6 + 9, "{names:?}");
        assert_eq!(names[0], "2->3 spawn*");
        assert_eq!(names[1], "2->3 col reconfiguration*");
        assert_eq!(names[4], "2->3 col*");
        assert_eq!(names[5], "2->3 col eq1*");
        assert_eq!(names[10], "2->3 col thread*");
        assert!(rows.iter().all(|r| r.ranks == 3));
        // Spawn: the median over the blocking runs of every method.
        assert_eq!((rows[0].onesided_us, rows[0].peer_us), (20e3, 80e3));
        assert_eq!(rows[0].speedup, 4.0);
        // The whole reconfiguration: spawn + T_redis, per round.
        assert_eq!((rows[1].onesided_us, rows[1].peer_us), (50e3, 140e3));
        // Equation 1: 30 + 2 ms times the fewest iterations (2: ours of
        // the median 3; the peer's 5).
        assert_eq!(rows[5].onesided_us, (30.0 + 2.0 * 3.0) * 1e3);
        assert_eq!(rows[5].peer_us, (60.0 + 2.0 * 5.0) * 1e3);
        assert_eq!(rows[4].overlap, None);
        let overlap = rows[10].overlap.unwrap();
        assert_eq!(
            (overlap.omega, overlap.iterations),
            ([1.1, 4.0], [3.0, 9.0])
        );
    }

    #[test]
    fn rows_of_one_side_keep_the_other_empty() {
        let mut results = Results::new();
        results.insert(
            run(4, 2, "col", "blocking"),
            [vec![timed(0.0, 5.0, 1.0, 0.0)], vec![]],
        );
        let rows = rows(&results, "tcp", 4);
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].series, "4->2 col");
        assert_eq!(rows[0].onesided_us, 5e3);
        assert!(rows[0].peer_us.is_nan() && rows[0].speedup.is_nan());
    }

    #[test]
    fn figures_cover_both_sides_and_every_pair() {
        let mut results = Results::new();
        for r in runs() {
            results.insert(
                r,
                [
                    vec![timed(1.0, 2.0, 1.0, 1.0)],
                    vec![timed(3.0, 4.0, 2.0, 2.0)],
                ],
            );
        }
        let figures = figures(&results, "(shm)", 2);
        let names: Vec<&str> = figures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "fig5-blocking",
                "fig6-omega-onesided",
                "fig7-omega-mpich",
                "fig8-iterations-onesided",
                "fig8-iterations-mpich",
                "fig9-totals-onesided",
                "fig9-totals-mpich"
            ]
        );
        assert_eq!(figures[0].groups[2], "2->3*");
        assert_eq!(figures[0].series.len(), 6);
        assert_eq!(figures[0].series[3].0, "MPICH col");
        assert_eq!(figures[0].series[3].1, vec![Some(4.0); 6]);
        assert_eq!(figures[2].series[0].1, vec![Some(2.0); 6]);
        assert_eq!(figures[5].series.len(), 3 + 9);
        // eq. 1 on onesided: 2 + 2 ms x 1 iteration.
        assert_eq!(figures[5].series[0].1, vec![Some(4.0); 6]);
        assert!(figures
            .iter()
            .all(|f| f.series.iter().all(|(_, v)| v.len() == 6)));
    }
}
