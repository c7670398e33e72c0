//! The pure side of the `onesided-bench` driver: its command line, the
//! result lines both sides print, and how rounds become table rows.

use std::collections::BTreeMap;

use crate::report::{self, Row};

/// What `onesided-bench` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// Suites to run (`all` expands to every suite).
    pub suites: Vec<String>,
    /// Ranks per side.
    pub np: u32,
    /// `shm` or `tcp`.
    pub provider: String,
    /// The peer (only `mpich`).
    pub peer: String,
    /// Where JSON lines go, if anywhere.
    pub json: Option<String>,
    /// Alternating rounds of each side ([`DEFAULT_ROUNDS`] unless given).
    pub rounds: u32,
    /// Multiplies every repetition count.
    pub scale: f64,
    /// Every rank its own host: onesided with `ONESIDED_HOST=node{rank}`,
    /// MPICH with `MPIR_CVAR_NOLOCAL=1` (the provider paths on one machine).
    pub nolocal: bool,
    /// The libfabric onesided's side loads.
    pub libfabric: Libfabric,
    /// The reduce suite's interference: (rank, factor).
    pub slow: (u32, u32),
}

/// Which libfabric onesided's side of a run loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Libfabric {
    /// The system's (Debian's 1.17), which onesided is built against.
    System,
    /// The one MPICH loads (the wheel's 2.5.1, through `LD_LIBRARY_PATH`;
    /// libfabric keeps its ABI): the same provider code on both sides,
    /// the default with `--nolocal`, where the provider's speed is the
    /// question.
    Mpich,
}

/// Rounds when `--rounds` is not given. The speedup is the median of the
/// rounds' ratios, and rows whose sides are within the machine's noise of
/// each other (±15% from round to round) need many rounds for that median
/// to settle: on the same code, runs of 5 rounds showed rows below parity
/// that runs of 11 did not. It settles, not removes, what is below parity
/// (measurements: `docs/measurements.md`, "Benchmark rounds").
pub const DEFAULT_ROUNDS: u32 = 11;

/// onesided-bench: runs benchmark suites side by side with MPICH 5.0.2
/// (both sides launched here, taking turns case by case), prints the table
/// with each row's speedup, writes JSON rows and SVG plots.
#[derive(Debug, clap::Parser)]
#[command(name = "onesided-bench", version)]
pub struct Cli {
    /// Suites, comma-separated, or all.
    #[arg(
        value_name = "SUITE[,SUITE...]|all",
        value_delimiter = ',',
        required = true,
        value_parser = clap::builder::PossibleValuesParser::new(
            crate::suites::SUITES.iter().copied().chain([crate::abi::SUITE, crate::malleable::SUITE, crate::reduce::SUITE, crate::scale::SUITE, "all"])
        )
    )]
    suites: Vec<String>,
    /// Ranks per side.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    np: u32,
    /// Provider of both sides.
    #[arg(long, default_value = "shm", value_parser = ["shm", "tcp"])]
    provider: String,
    /// The peer.
    #[arg(long, default_value = "mpich", value_parser = ["mpich"])]
    peer: String,
    /// Where JSON lines go.
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Alternating rounds of the sides.
    #[arg(long, default_value_t = DEFAULT_ROUNDS, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Multiplies every repetition count.
    #[arg(long, default_value_t = 1.0, value_parser = scale)]
    scale: f64,
    /// Every rank its own host (the provider paths on one machine).
    #[arg(long)]
    nolocal: bool,
    /// The libfabric onesided's side loads (default: mpich with
    /// --nolocal, else system).
    #[arg(long, value_enum)]
    libfabric: Option<Libfabric>,
    /// The reduce suite's interference, RANK:FACTOR: that rank computes
    /// FACTOR ms instead of 1 before each reduction, pinned to the last
    /// core beside a CPU hog.
    #[arg(long, value_name = "RANK:FACTOR", value_parser = slow, default_value = "1:20")]
    slow: (u32, u32),
}

/// RANK:FACTOR, both positive integers (the rank not 0: rank 0 is the
/// root and, in onesided, the master).
fn slow(text: &str) -> Result<(u32, u32), String> {
    let parsed = text
        .split_once(':')
        .and_then(|(r, f)| Some((r.parse::<u32>().ok()?, f.parse::<u32>().ok()?)));
    match parsed {
        Some((r, f)) if r > 0 && f > 0 => Ok((r, f)),
        _ => Err("RANK:FACTOR, a rank above 0 and a factor above 0".to_string()),
    }
}

/// A scale: a number in (0, 100].
fn scale(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && *v <= 100.0)
        .ok_or_else(|| "a number in (0, 100]".to_string())
}

impl From<Cli> for Args {
    fn from(cli: Cli) -> Args {
        let suites = if cli.suites.iter().any(|s| s == "all") {
            crate::suites::SUITES
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            cli.suites
        };
        Args {
            suites,
            np: cli.np,
            provider: cli.provider,
            peer: cli.peer,
            json: cli.json,
            rounds: cli.rounds,
            scale: cli.scale,
            nolocal: cli.nolocal,
            libfabric: cli.libfabric.unwrap_or(match cli.nolocal {
                true => Libfabric::Mpich,
                false => Libfabric::System,
            }),
            slow: cli.slow,
        }
    }
}

/// Parses the command line (without the program name).
///
/// # Errors
/// clap's error naming the bad or missing argument (`Error::exit` prints
/// it with status 2; `--help` and `--version` are errors of their own
/// kinds, status 0).
pub fn parse_args(args: &[String]) -> Result<Args, clap::Error> {
    use clap::Parser;
    let line = std::iter::once("onesided-bench".to_string()).chain(args.iter().cloned());
    Cli::try_parse_from(line).map(Args::from)
}

/// A side's line saying what it runs on, `loaded WHAT VALUE...`
/// (`loaded libfabric 2.5 /path/libfabric.so.1`, `loaded mpich 5.0.2`):
/// `(WHAT, VALUE...)`; `None` for any other line.
pub fn parse_loaded(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("loaded ")?;
    let (what, value) = rest.trim().split_once(' ')?;
    Some((what.to_string(), value.trim().to_string()))
}

/// One line of a side's output: `SUITE CASE BYTES MEDIAN_US MIN_US MAX_US`.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Suite.
    pub suite: String,
    /// Case.
    pub case: String,
    /// Bytes per operation.
    pub bytes: u64,
    /// Median microseconds.
    pub median_us: f64,
    /// The algorithm used, when the side says (a seventh field).
    pub algorithm: Option<String>,
}

/// Parses a result line (six fields, and an optional seventh: the
/// algorithm); `None` for any other line.
pub fn parse_line(line: &str) -> Option<Measured> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let (suite, case, bytes, median, algorithm) = match f.as_slice() {
        [suite, case, bytes, median, _min, _max] => (suite, case, bytes, median, None),
        [suite, case, bytes, median, _min, _max, a] => {
            (suite, case, bytes, median, Some(a.to_string()))
        }
        _ => return None,
    };
    Some(Measured {
        suite: suite.to_string(),
        case: case.to_string(),
        bytes: bytes.parse().ok()?,
        median_us: median.parse().ok().filter(|m: &f64| m.is_finite())?,
        algorithm,
    })
}

/// (suite, case, bytes).
type Case = (String, String, u64);

/// Medians of each case over rounds, per side.
#[derive(Debug, Default)]
pub struct Rounds {
    /// Each case's (onesided medians, peer medians).
    cases: BTreeMap<Case, (Vec<f64>, Vec<f64>)>,
    /// The algorithm onesided used per case (the last round's).
    algorithms: BTreeMap<Case, String>,
    /// First-seen order of the cases.
    order: Vec<Case>,
}

impl Rounds {
    /// Records one side's round (`peer` false: onesided).
    pub fn add(&mut self, peer: bool, lines: &[Measured]) {
        for m in lines {
            let key = (m.suite.clone(), m.case.clone(), m.bytes);
            if !self.cases.contains_key(&key) {
                self.order.push(key.clone());
            }
            if let (false, Some(a)) = (peer, &m.algorithm) {
                self.algorithms.insert(key.clone(), a.clone());
            }
            let entry = self.cases.entry(key).or_default();
            if peer {
                entry.1.push(m.median_us);
            } else {
                entry.0.push(m.median_us);
            }
        }
    }

    /// One row per case both sides measured: the median of each side's
    /// round medians and the median of the rounds' speedups (round `i`
    /// of one side against round `i` of the other), `series_suffix`
    /// appended to the case (peer variants).
    pub fn rows(&self, ranks: u32, provider: &str, series_suffix: &str) -> Vec<Row> {
        self.order
            .iter()
            .filter_map(|key| {
                let (ours, peer) = self.cases.get(key)?;
                let pairs: Vec<f64> = (ours.iter().zip(peer))
                    .map(|(&o, &p)| report::speedup(o, p))
                    .collect();
                Some(Row {
                    suite: key.0.clone(),
                    series: format!("{}{series_suffix}", key.1),
                    bytes: key.2,
                    ranks,
                    provider: provider.to_string(),
                    onesided_us: median(ours)?,
                    peer_us: median(peer)?,
                    speedup: median(&pairs)?,
                    algorithm: self.algorithms.get(key).cloned(),
                    overlap: None,
                    master_load: None,
                    note: None,
                })
            })
            .collect()
    }
}

/// The median of `v`, the mean of the middle two for an even length
/// (`None` when empty).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let upper = *v.get(v.len() / 2)?;
    Some(match v.len() % 2 {
        0 => (v[v.len() / 2 - 1] + upper) / 2.0,
        _ => upper,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn command_lines() {
        let a = parse_args(&args(
            "get --np 4 --provider tcp --peer mpich --json x.json",
        ))
        .unwrap();
        assert_eq!(a.suites, ["get"]);
        assert_eq!(
            (a.np, a.provider.as_str(), a.json.as_deref()),
            (4, "tcp", Some("x.json"))
        );
        assert_eq!(parse_args(&args("all")).unwrap().suites.len(), 6);
        assert_eq!(parse_args(&args("get,put --scale 0.5")).unwrap().scale, 0.5);
        let nolocal = parse_args(&args("get --nolocal --np 2")).unwrap();
        assert!(nolocal.nolocal);
        assert_eq!(nolocal.libfabric, Libfabric::Mpich);
        let system = "get --libfabric system --nolocal";
        let system = parse_args(&args(system)).unwrap();
        assert_eq!(system.libfabric, Libfabric::System);
        let local = parse_args(&args("get")).unwrap();
        assert_eq!(local.libfabric, Libfabric::System);
        let mpich = parse_args(&args("get --libfabric mpich")).unwrap();
        assert_eq!(mpich.libfabric, Libfabric::Mpich);
        for bad in [
            "",
            "nope",
            "get --np",
            "get --np 0",
            "get --provider verbs",
            "get --peer ompi",
            "get --x 1",
            "get --scale -1",
            "get --libfabric 2.5",
        ] {
            let e = parse_args(&args(bad)).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}: {e}");
            assert!(e.to_string().starts_with("error: "), "{bad}: {e}");
        }
    }

    #[test]
    fn loaded_lines_say_what_a_side_runs_on() {
        assert_eq!(
            parse_loaded("loaded libfabric 2.5 /v/lib/mpich/libfabric.so.1"),
            Some(("libfabric".into(), "2.5 /v/lib/mpich/libfabric.so.1".into()))
        );
        assert_eq!(
            parse_loaded("loaded mpich 5.0.2"),
            Some(("mpich".into(), "5.0.2".into()))
        );
        for other in ["loaded", "loaded x", "get x 8 1 1 1", "pid 0 12"] {
            assert_eq!(parse_loaded(other), None, "{other}");
        }
    }

    #[test]
    fn lines_and_rounds() {
        assert_eq!(parse_line("noise"), None);
        assert_eq!(parse_line("get x 8 nan 1 2"), None);
        let a = parse_line("collectives allreduce 8 1.5 1.0 2.0 ring").unwrap();
        assert_eq!(a.algorithm.as_deref(), Some("ring"));
        let m = parse_line("get lock_all_flush 8 0.130 0.120 0.230").unwrap();
        assert_eq!(m.algorithm, None);
        assert_eq!((m.bytes, m.median_us), (8, 0.13));
        let mut r = Rounds::default();
        let line = |v: f64| Measured {
            median_us: v,
            ..m.clone()
        };
        r.add(false, &[line(1.0)]);
        r.add(true, &[line(4.0)]);
        r.add(false, &[line(3.0)]);
        r.add(true, &[line(6.0)]);
        r.add(false, &[line(2.0)]);
        let only_ours = Measured {
            case: "other".into(),
            ..m.clone()
        };
        r.add(false, &[only_ours]);
        let rows = r.rows(2, "shm", "");
        assert_eq!(rows.len(), 1, "a case one side lacks has no row");
        assert_eq!((rows[0].onesided_us, rows[0].peer_us), (2.0, 5.0));
        // Rounds (1, 4), (3, 6), (2, -): the speedups 4 and 2, taken pair
        // by pair.
        assert_eq!(rows[0].speedup, 3.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(r.rows(2, "shm", " yield")[0].series, "lock_all_flush yield");
    }
}
