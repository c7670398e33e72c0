//! The `reduce` suite's pure side: its cases, the lines both sides print,
//! how rounds of them become rows, and the tally of the kill trials.
//!
//! Each case is one job per side and round: `onesided-reduce-time` under
//! `osrun` against `benches/mpich/reduce.c` (`MPI_Reduce`, or as many
//! `MPI_Ireduce` as reductions in flight) under `mpiexec`, one after the
//! other, 9 timed reductions of `f64` sums to rank 0 each. The cases, at
//! 2, 3 and 4 ranks: every size of [`SIZES`] idle and under interference
//! (`--slow RANK:FACTOR`: that rank computes FACTOR ms instead of 1 before
//! each reduction, pinned to the last core beside a CPU hog), and
//! [`IDS`] reductions at once of [`CONCURRENT_BYTES`]. Then [`KILLS`]
//! kill trials at 4 ranks: one reduction of [`KILL_BYTES`] each, rank 1
//! killed (SIGKILL) at a random instant of `[0, t]` after its reduce call
//! returned, `t` the mean time of 9 reductions without kills; each trial
//! is a job of its own under `osrun --ft` over [`KILL_PROVIDER`] (a fresh
//! rank 1 each time), and
//! the root's outcome is tallied: right (checked against the serial
//! sum), a clear error, or hung (no end within [`TRIAL_TIMEOUT_S`]).
//! Sizes and byte counts scale with `--scale`.

use std::collections::BTreeMap;

use crate::driver::median;
use crate::report::{speedup, MasterLoad, Row};

/// The suite's name; its concurrent rows are suite `reduce-concurrent`.
pub const SUITE: &str = "reduce";

/// The sizes, in bytes (of `f64`), at `--scale 1`.
pub const SIZES: [u64; 5] = [128 << 10, 1 << 20, 4 << 20, 8 << 20, 32 << 20];

/// Ranks of the runs.
pub const RANKS: [u32; 3] = [2, 3, 4];

/// Reductions in flight at once, in the concurrent cases.
pub const IDS: [u64; 3] = [4, 8, 16];

/// Bytes of each concurrent reduction (the study's 8 MiB).
pub const CONCURRENT_BYTES: u64 = 8 << 20;

/// Kill trials.
pub const KILLS: u32 = 100;

/// Bytes of each kill trial's reduction.
pub const KILL_BYTES: u64 = 32 << 20;

/// Ranks of the kill trials.
pub const KILL_RANKS: u32 = 4;

/// The kill trials' provider: what `osrun --ft` picks (a rank killed
/// inside libfabric 1.17's shm provider can leave a survivor's lock held).
pub const KILL_PROVIDER: &str = "tcp";

/// A trial that has not ended after this long counts as hung.
pub const TRIAL_TIMEOUT_S: u64 = 60;

/// One case of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Case {
    /// Ranks.
    pub ranks: u32,
    /// Bytes per reduction.
    pub bytes: u64,
    /// Reductions in flight at once.
    pub ids: u64,
    /// Under interference.
    pub slow: bool,
}

impl Case {
    /// Elements (`f64`) per reduction.
    pub fn elements(&self) -> u64 {
        (self.bytes / 8).max(1)
    }
}

/// Bytes scaled by `scale`, whole `f64`s, at least one.
pub fn scaled(bytes: u64, scale: f64) -> u64 {
    (((bytes as f64 * scale) / 8.0).round() as u64).max(1) * 8
}

/// Every case of a round, at `scale`.
pub fn cases(scale: f64) -> Vec<Case> {
    let mut out = Vec::new();
    for ranks in RANKS {
        for slow in [false, true] {
            for bytes in SIZES {
                out.push(Case {
                    ranks,
                    bytes: scaled(bytes, scale),
                    ids: 1,
                    slow,
                });
            }
        }
        for ids in IDS {
            out.push(Case {
                ranks,
                bytes: scaled(CONCURRENT_BYTES, scale),
                ids,
                slow: false,
            });
        }
    }
    out
}

/// What one side's job measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// Median of its reductions, ms.
    pub median_ms: f64,
    /// Mean of its reductions, ms.
    pub mean_ms: f64,
    /// The master's control traffic (onesided only).
    pub load: Option<MasterLoad>,
}

/// Parses `reduce P ranks LEN f64 ids K median X ms mean Z ms min Y ms`,
/// with onesided's `master in M/s B B/s out M/s B B/s` after it; `None`
/// for any other line.
pub fn parse(line: &str) -> Option<Timed> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let head = f.get(..15)?;
    let ["reduce", _, "ranks", _, "f64", "ids", _, "median", median, "ms", "mean", mean, "ms", "min", _] =
        head
    else {
        return None;
    };
    let load = match &f[15..] {
        ["ms", "master", "in", m_in, b_in, "B/s", "out", m_out, b_out, "B/s"] => {
            let rate = |s: &str| s.strip_suffix("/s")?.parse::<f64>().ok();
            Some(MasterLoad {
                messages_in: rate(m_in)?,
                bytes_in: b_in.parse().ok()?,
                messages_out: rate(m_out)?,
                bytes_out: b_out.parse().ok()?,
            })
        }
        ["ms"] => None,
        _ => return None,
    };
    Some(Timed {
        median_ms: median.parse().ok()?,
        mean_ms: mean.parse().ok()?,
        load,
    })
}

/// The rows of `rounds` (each case's (onesided, peer) per round), in the
/// order of [`cases`]: times are medians over rounds, the speedup the
/// median of the rounds' ratios, the master load its median per field.
/// Series: `pP idle`, `pP slow R:F` (suite `reduce`, sized), `pP xK`
/// (suite `reduce-concurrent`).
pub fn rows(
    rounds: &BTreeMap<Case, Vec<(Timed, Timed)>>,
    (slow_rank, factor): (u32, u32),
    provider: &str,
    scale: f64,
) -> Vec<Row> {
    let mut out = Vec::new();
    for case in cases(scale) {
        let Some(runs) = rounds.get(&case).filter(|r| !r.is_empty()) else {
            continue;
        };
        let of =
            |f: &dyn Fn(&(Timed, Timed)) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        let load = |f: fn(&MasterLoad) -> f64| of(&|(t, _)| t.load.as_ref().map_or(f64::NAN, f));
        let (suite, series, bytes) = match (case.ids, case.slow) {
            (1, false) => (SUITE, format!("p{} idle", case.ranks), case.bytes),
            (1, true) => (
                SUITE,
                format!("p{} slow {slow_rank}:{factor}", case.ranks),
                case.bytes,
            ),
            (k, _) => (
                "reduce-concurrent",
                format!(
                    "p{} x{k} {}",
                    case.ranks,
                    crate::report::size_label(case.bytes)
                ),
                0,
            ),
        };
        let master_load = runs
            .iter()
            .any(|(t, _)| t.load.is_some())
            .then(|| MasterLoad {
                messages_in: load(|l| l.messages_in).unwrap_or(f64::NAN),
                bytes_in: load(|l| l.bytes_in).unwrap_or(f64::NAN),
                messages_out: load(|l| l.messages_out).unwrap_or(f64::NAN),
                bytes_out: load(|l| l.bytes_out).unwrap_or(f64::NAN),
            });
        out.push(Row {
            suite: suite.to_string(),
            series,
            bytes,
            ranks: case.ranks,
            provider: provider.to_string(),
            onesided_us: of(&|(t, _)| t.median_ms).unwrap_or(f64::NAN) * 1e3,
            peer_us: of(&|(_, p)| p.median_ms).unwrap_or(f64::NAN) * 1e3,
            speedup: of(&|(t, p)| speedup(t.median_ms, p.median_ms)).unwrap_or(f64::NAN),
            algorithm: None,
            overlap: None,
            master_load,
            note: None,
        });
    }
    out
}

/// How a kill trial ended, as the root printed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The right value.
    Right,
    /// A wrong value: silent corruption.
    Wrong,
    /// A clear error.
    Failed,
    /// No end in time.
    Hung,
}

/// The root's trial line (`trial right`, `trial wrong ...`, `trial
/// failed ...`); `None` for any other.
pub fn parse_trial(line: &str) -> Option<Outcome> {
    let rest = line.strip_prefix("trial ")?;
    match rest.split(':').next()? {
        "right" => Some(Outcome::Right),
        "wrong" => Some(Outcome::Wrong),
        "failed" => Some(Outcome::Failed),
        _ => None,
    }
}

/// The tally of the kill trials.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kills {
    /// Ranks of the trials.
    pub ranks: u32,
    /// Their provider.
    pub provider: String,
    /// Bytes of each reduction.
    pub bytes: u64,
    /// `t`: the mean time of a reduction without kills, ms.
    pub t_ms: f64,
    /// Trials that ended with the right value.
    pub right: u32,
    /// With a wrong value.
    pub wrong: u32,
    /// With a clear error.
    pub failed: u32,
    /// That did not end.
    pub hung: u32,
}

impl Kills {
    /// Counts a trial.
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Right => self.right += 1,
            Outcome::Wrong => self.wrong += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Hung => self.hung += 1,
        }
    }

    /// Trials counted.
    pub fn trials(&self) -> u32 {
        self.right + self.wrong + self.failed + self.hung
    }

    /// The report's line.
    pub fn line(&self) -> String {
        format!(
            "kill: {} ranks ({}), {} per reduction, rank 1 killed in [0, {:.1} ms]: {} of {} right, {} wrong, {} failed with an error, {} hung",
            self.ranks,
            self.provider,
            crate::report::size_label(self.bytes),
            self.t_ms,
            self.right,
            self.trials(),
            self.wrong,
            self.failed,
            self.hung
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_cover_sizes_interference_and_concurrency() {
        let all = cases(1.0);
        assert_eq!(all.len(), RANKS.len() * (2 * SIZES.len() + IDS.len()));
        assert!(all.iter().all(|c| (2..=4).contains(&c.ranks)));
        assert_eq!(all[0].elements(), 16 << 10);
        let small = cases(0.01);
        assert_eq!(small[4].bytes, scaled(32 << 20, 0.01));
        assert_eq!(scaled(8, 0.001), 8, "at least one element");
    }

    #[test]
    fn lines_parse() {
        let ours = "reduce 2 ranks 4194304 f64 ids 1 median 26.28 ms mean 27.00 ms min 23.38 ms master in 98/s 2455 B/s out 99/s 2574 B/s";
        let t = parse(ours).expect("ours");
        assert_eq!((t.median_ms, t.mean_ms), (26.28, 27.0));
        assert_eq!(
            t.load.map(|l| (l.messages_in, l.bytes_out)),
            Some((98.0, 2574.0))
        );
        let peer = "reduce 2 ranks 4194304 f64 ids 1 median 12.84 ms mean 12.90 ms min 12.58 ms";
        assert_eq!(parse(peer).map(|t| t.load), Some(None));
        assert_eq!(parse("pid 0 12"), None);
        assert_eq!(parse(&peer.replace("12.84", "x")), None);
        assert_eq!(parse(&format!("{peer} extra")), None);
        assert_eq!(parse_trial("trial right"), Some(Outcome::Right));
        assert_eq!(
            parse_trial("trial failed: reduction 0 failed: rank 1 ..."),
            Some(Outcome::Failed)
        );
        assert_eq!(
            parse_trial("trial wrong: element 3 is 1"),
            Some(Outcome::Wrong)
        );
        assert_eq!(parse_trial("armed 12"), None);
    }

    #[test]
    fn rows_take_medians_and_ratios_round_by_round() {
        let t = |ms: f64, load: Option<MasterLoad>| Timed {
            median_ms: ms,
            mean_ms: ms,
            load,
        };
        let load = |m: f64| MasterLoad {
            messages_in: m,
            bytes_in: 10.0 * m,
            messages_out: m,
            bytes_out: 10.0 * m,
        };
        let all = cases(1.0);
        let mut rounds = BTreeMap::new();
        rounds.insert(
            all[0],
            vec![
                (t(2.0, Some(load(1.0))), t(1.0, None)),
                (t(4.0, Some(load(3.0))), t(8.0, None)),
                (t(3.0, Some(load(2.0))), t(3.0, None)),
            ],
        );
        let concurrent = *all.iter().find(|c| c.ids == 16).expect("16 ids");
        rounds.insert(concurrent, vec![(t(10.0, None), t(20.0, None))]);
        let rows = rows(&rounds, (1, 20), "shm", 1.0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].case(), "p2 idle 128KiB");
        assert_eq!((rows[0].onesided_us, rows[0].peer_us), (3e3, 3e3));
        assert_eq!(rows[0].speedup, 1.0, "ratios 0.5, 2, 1");
        assert_eq!(rows[0].master_load.map(|l| l.bytes_in), Some(20.0));
        assert_eq!(
            (rows[1].suite.as_str(), rows[1].case()),
            ("reduce-concurrent", "p2 x16 8MiB".to_string())
        );
        assert_eq!(rows[1].speedup, 2.0);
        let mut kills = Kills {
            ranks: 4,
            bytes: 32 << 20,
            t_ms: 40.0,
            ..Kills::default()
        };
        kills.add(Outcome::Right);
        kills.add(Outcome::Hung);
        assert_eq!(kills.trials(), 2);
        assert!(kills.line().contains("1 of 2 right"), "{}", kills.line());
    }
}
