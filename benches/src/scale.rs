//! The scale suite (`onesided-bench scale`): what each operation whose
//! cost in p the crates state sends per rank, and how long it takes, at
//! p = 2, 4, ... up to `--np`, beside MPICH's same operations.
//!
//! onesided's side is `scale-check` (tests/src/bin), which reports per
//! rank and operation the endpoint's counters before and after
//! (`op NAME rank R messages M bytes B operations O pmi P receive_memory
//! V us T ...`); MPICH's is `benches/mpich/scale.c` (`op NAME rank R us
//! T`: its message counts are not known here). Pure: parsing, the
//! aggregation over ranks and rounds, the fitted growth, the table.

use std::collections::BTreeMap;

/// The suite's name on the command line.
pub const SUITE: &str = "scale";

/// The process counts of a run up to `np`: 2, 4, 8, ... (np itself last
/// when it is no power of two).
pub fn ranks(np: u32) -> Vec<u32> {
    let mut out: Vec<u32> = (1..=16)
        .map(|k| 1u32 << k)
        .take_while(|&p| p <= np)
        .collect();
    if np >= 2 && out.last() != Some(&np) {
        out.push(np);
    }
    out
}

/// One rank's report of one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// Messages it sent (onesided's side only).
    pub messages: Option<u64>,
    /// Their bytes.
    pub bytes: Option<u64>,
    /// Its requests to the process manager.
    pub pmi: Option<u64>,
    /// Bytes its standing receives held afterwards.
    pub receive_memory: Option<u64>,
    /// Its time, in microseconds.
    pub us: f64,
}

/// Parses an `op` line: the operation and the rank's sample.
pub fn parse(line: &str) -> Option<(String, Sample)> {
    let words: Vec<&str> = line.strip_prefix("op ")?.split_whitespace().collect();
    let name = words.first()?.to_string();
    let field = |key: &str| {
        (words.windows(2))
            .find(|w| w[0] == key)
            .and_then(|w| w[1].parse::<f64>().ok())
    };
    let count = |key: &str| field(key).map(|v| v as u64);
    Some((
        name,
        Sample {
            messages: count("messages"),
            bytes: count("bytes"),
            pmi: count("pmi"),
            receive_memory: count("receive_memory"),
            us: field("us")?,
        },
    ))
}

/// One run's samples: by operation, one per rank.
pub type Run = BTreeMap<String, Vec<Sample>>;

/// The operation whose counters come from the process's counters at exit
/// (`World::finalize` consumes them): those minus the `total
/// before_finalize` line's.
pub const FINALIZE: &str = "finalize_after_growth";

/// Collects a run's `op` lines (standard output and error together: the
/// counters at exit, `ONESIDED_STATS` JSON lines, are on the latter).
pub fn collect<'a>(lines: impl Iterator<Item = &'a str> + Clone) -> Run {
    let finalize = finalize_counts(lines.clone());
    let mut run = Run::new();
    for line in lines {
        let Some((name, mut sample)) = parse(line) else {
            continue;
        };
        if name == FINALIZE {
            let rank = (line.split_whitespace().skip_while(|w| *w != "rank"))
                .nth(1)
                .and_then(|r| r.parse::<u32>().ok());
            if let Some(&(messages, bytes, pmi)) = rank.and_then(|r| finalize.get(&r)) {
                sample.messages = Some(messages);
                sample.bytes = Some(bytes);
                sample.pmi = Some(pmi);
            }
        }
        run.entry(name).or_default().push(sample);
    }
    run
}

/// What each rank's `World::finalize` sent (messages, bytes, PMI
/// requests): its counters at exit minus those before.
fn finalize_counts<'a>(lines: impl Iterator<Item = &'a str>) -> BTreeMap<u32, (u64, u64, u64)> {
    let (mut before, mut after) = (BTreeMap::new(), BTreeMap::new());
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let word = |key: &str| {
            (words.windows(2))
                .find(|w| w[0] == key)
                .and_then(|w| w[1].parse::<u64>().ok())
        };
        if line.starts_with("total before_finalize ") {
            if let (Some(r), Some(m), Some(b), Some(p)) =
                (word("rank"), word("messages"), word("bytes"), word("pmi"))
            {
                before.insert(r as u32, (m, b, p));
            }
        } else if line.starts_with("{\"onesided_stats\":") {
            let json = |key: &str| {
                let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
                let digits: String = line[at..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse::<u64>().ok()
            };
            if let (Some(r), Some(m), Some(b), Some(p)) = (
                json("rank"),
                json("messages"),
                json("message_bytes"),
                json("pmi_requests"),
            ) {
                after.insert(r as u32, (m, b, p));
            }
        }
    }
    (after.into_iter())
        .filter_map(|(r, (m, b, p))| {
            let (m0, b0, p0) = before.get(&r)?;
            Some((
                r,
                (
                    m.saturating_sub(*m0),
                    b.saturating_sub(*b0),
                    p.saturating_sub(*p0),
                ),
            ))
        })
        .collect()
}

/// An operation at one process count, over the rounds: onesided's counts
/// (max and mean over ranks: exact, the same every round), and each
/// side's time (mean over ranks, median over rounds).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The operation.
    pub op: String,
    /// Processes.
    pub ranks: u32,
    /// Messages per rank: the most, and the mean.
    pub messages: (u64, f64),
    /// Message bytes per rank, the most.
    pub bytes: u64,
    /// PMI requests per rank, the most.
    pub pmi: u64,
    /// Standing-receive memory per rank, the most.
    pub receive_memory: u64,
    /// onesided's time, in microseconds.
    pub onesided_us: f64,
    /// MPICH's, where its runs completed.
    pub peer_us: Option<f64>,
}

/// The median of `values` (NaN when empty).
fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    match values.len() % 2 {
        1 => values[mid],
        _ => (values[mid - 1] + values[mid]) / 2.0,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        f64::NAN
    } else {
        sum / n as f64
    }
}

/// The points of `ranks` processes from each side's runs (onesided's,
/// MPICH's), in onesided's order of operations.
pub fn points(ranks: u32, ours: &[Run], theirs: &[Run]) -> Vec<Point> {
    let Some(first) = ours.first() else {
        return Vec::new();
    };
    let time = |runs: &[Run], op: &str| {
        let per_round: Vec<f64> = (runs.iter())
            .filter_map(|r| r.get(op))
            .map(|s| mean(s.iter().map(|s| s.us)))
            .collect();
        (!per_round.is_empty()).then(|| median(per_round))
    };
    (first.iter())
        .map(|(op, samples)| {
            let most =
                |f: fn(&Sample) -> Option<u64>| samples.iter().filter_map(f).max().unwrap_or(0);
            Point {
                op: op.clone(),
                ranks,
                messages: (
                    most(|s| s.messages),
                    mean(samples.iter().filter_map(|s| s.messages).map(|m| m as f64)),
                ),
                bytes: most(|s| s.bytes),
                pmi: most(|s| s.pmi),
                receive_memory: most(|s| s.receive_memory),
                onesided_us: time(ours, op).unwrap_or(f64::NAN),
                peer_us: time(theirs, op),
            }
        })
        .collect()
}

/// The exponent b of the least-squares fit messages = a p^b over the
/// points of `op` with messages (the most per rank) above zero; `None`
/// with fewer than two such points.
pub fn growth(points: &[Point], op: &str) -> Option<f64> {
    let xy: Vec<(f64, f64)> = (points.iter())
        .filter(|p| p.op == op && p.messages.0 > 0)
        .map(|p| (f64::from(p.ranks).ln(), (p.messages.0 as f64).ln()))
        .collect();
    if xy.len() < 2 {
        return None;
    }
    let n = xy.len() as f64;
    let (mx, my) = (
        xy.iter().map(|p| p.0).sum::<f64>() / n,
        xy.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// The table: a line per operation and process count, then each
/// operation's fitted growth exponent.
pub fn table(points: &[Point]) -> String {
    let mut out = format!(
        "{:<28} {:>5} {:>9} {:>9} {:>9} {:>5} {:>9} {:>12} {:>12} {:>8}\n",
        "op",
        "ranks",
        "msgs_max",
        "msgs_mean",
        "bytes_max",
        "pmi",
        "recv_KiB",
        "onesided_us",
        "mpich_us",
        "speedup"
    );
    let mut sorted: Vec<&Point> = points.iter().collect();
    sorted.sort_by(|a, b| a.op.cmp(&b.op).then(a.ranks.cmp(&b.ranks)));
    for p in &sorted {
        let (peer, speedup) = match p.peer_us {
            Some(t) => (format!("{t:.1}"), format!("{:.2}x", t / p.onesided_us)),
            None => ("-".into(), "-".into()),
        };
        out += &format!(
            "{:<28} {:>5} {:>9} {:>9.1} {:>9} {:>5} {:>9} {:>12.1} {:>12} {:>8}\n",
            p.op,
            p.ranks,
            p.messages.0,
            p.messages.1,
            p.bytes,
            p.pmi,
            p.receive_memory / 1024,
            p.onesided_us,
            peer,
            speedup
        );
    }
    out += "growth of messages per rank (max), fitted m = a p^b:\n";
    let mut ops: Vec<&str> = points.iter().map(|p| p.op.as_str()).collect();
    ops.sort_unstable();
    ops.dedup();
    for op in ops {
        match growth(points, op) {
            Some(b) => out += &format!("  {op:<28} b = {b:.2}\n"),
            None => out += &format!("  {op:<28} no messages\n"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_up_to_np() {
        assert_eq!(ranks(64), vec![2, 4, 8, 16, 32, 64]);
        assert_eq!(ranks(12), vec![2, 4, 8, 12]);
        assert_eq!(ranks(2), vec![2]);
        assert!(ranks(1).is_empty());
    }

    #[test]
    fn lines_of_both_sides_parse() {
        let ours = "op window_create_free rank 3 messages 9 bytes 620 operations 10 pmi 0 receive_memory 81920 us 8821.5 tagged 0 control 0x0102:5,0x0104:4";
        let (op, s) = parse(ours).unwrap();
        assert_eq!(op, "window_create_free");
        assert_eq!(
            (s.messages, s.bytes, s.pmi, s.receive_memory),
            (Some(9), Some(620), Some(0), Some(81920))
        );
        assert_eq!(s.us, 8821.5);
        let (op, s) = parse("op barrier rank 0 us 13.0").unwrap();
        assert_eq!((op.as_str(), s.messages, s.us), ("barrier", None, 13.0));
        assert!(parse("pid 0 123").is_none());
        assert!(parse("op x rank 0").is_none(), "no time");
    }

    #[test]
    fn finalize_counts_are_the_counters_at_exit_minus_before() {
        let lines = [
            "op finalize_after_growth rank 1 us 30.5",
            "total before_finalize rank 1 messages 80 bytes 4000 pmi 20",
            "{\"onesided_stats\":{\"rank\":1,\"messages\":83,\"message_bytes\":4060,\"tagged\":{\"count\":0},\"pmi_requests\":21}}",
            "op finalize_after_growth rank 2 us 10",
        ];
        let run = collect(lines.iter().copied());
        let f = &run[FINALIZE];
        assert_eq!(
            (f[0].messages, f[0].bytes, f[0].pmi),
            (Some(3), Some(60), Some(1))
        );
        assert_eq!(f[0].us, 30.5);
        assert_eq!(f[1].messages, None, "no counters at exit for rank 2");
    }

    #[test]
    fn points_take_the_most_messages_and_the_median_round() {
        let run = |us: f64, peer: bool| {
            let m = |k: u64| {
                if peer {
                    String::new()
                } else {
                    format!("messages {k} bytes {} pmi 1 receive_memory 4096 ", k * 10)
                }
            };
            let text = format!(
                "op a rank 0 {}us {us}\nop a rank 1 {}us {}\n",
                m(3),
                m(5),
                us + 2.0
            );
            collect(text.lines())
        };
        let ours = [run(10.0, false), run(30.0, false), run(20.0, false)];
        let theirs = [run(40.0, true)];
        let p = &points(4, &ours, &theirs)[0];
        assert_eq!(
            (p.messages.0, p.messages.1, p.bytes, p.pmi),
            (5, 4.0, 50, 1)
        );
        assert_eq!(
            p.onesided_us, 21.0,
            "median of the rounds' means 11, 31, 21"
        );
        assert_eq!(p.peer_us, Some(41.0));
        assert!(points(4, &[], &theirs).is_empty());
    }

    #[test]
    fn growth_fits_the_exponent() {
        let at = |ranks: u32, m: u64| Point {
            op: "x".into(),
            ranks,
            messages: (m, m as f64),
            bytes: 0,
            pmi: 0,
            receive_memory: 0,
            onesided_us: 1.0,
            peer_us: None,
        };
        let linear: Vec<Point> = [2, 4, 8, 16].map(|p| at(p, 3 * u64::from(p))).into();
        assert!((growth(&linear, "x").unwrap() - 1.0).abs() < 1e-9);
        let flat: Vec<Point> = [2, 4, 8].map(|p| at(p, 4)).into();
        assert!(growth(&flat, "x").unwrap().abs() < 1e-9);
        assert_eq!(growth(&[at(2, 0), at(4, 0)], "x"), None);
        let text = table(&linear);
        assert!(text.contains("b = 1.00"), "{text}");
    }
}
