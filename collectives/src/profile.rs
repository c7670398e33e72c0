//! Performance profiles (docs/spec/algorithm-selection.md): what each
//! algorithm of each collective cost, measured per geometry, element type
//! and message size; parsed from and written to a versioned text format;
//! filtered to the job's geometry; queried by interpolation. Pure code.
//!
//! # Format (version 1)
//! ```text
//! onesided-profile 1
//! # collective algorithm ranks ranks_per_host element bytes median_us
//! allreduce recursive_doubling 4 4 f64 8 1.25
//! allreduce ring 4 4 f64 1048576 410.5
//! ```
//! The first line names the format and its version. Then one entry per
//! line, seven fields separated by blanks: the collective (see
//! [`Collective`]), the algorithm (lower-case letters, digits and `_`),
//! the geometry (ranks, and ranks per host, at most ranks), the element
//! type (`i8` .. `u64`, `f32`, `f64`, or `bytes` where the type does not
//! matter), the message size in bytes (per rank, as the collective's count
//! times the element size) and the median time in microseconds (positive).
//! Blank lines and lines starting with `#` are ignored.

use std::fmt::Write as _;

use crate::algorithm::{Algorithm, Collective};

/// The header line of version 1.
pub const HEADER: &str = "onesided-profile 1";

/// Where a job runs: how many ranks, and how many share a host (the most
/// on any host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Geometry {
    /// Ranks in the group.
    pub ranks: u32,
    /// Ranks per host.
    pub ranks_per_host: u32,
}

/// One measurement: the median time of an algorithm at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The collective.
    pub collective: Collective,
    /// The algorithm's name.
    pub algorithm: String,
    /// Where it was measured.
    pub geometry: Geometry,
    /// The element type's name (`bytes`: any).
    pub element: String,
    /// Bytes per rank.
    pub bytes: u64,
    /// Median microseconds.
    pub us: f64,
}

/// A malformed, truncated or foreign profile: the file, the line (from 1)
/// and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("profile {file} line {line}: {what}")]
pub struct ProfileError {
    /// The file (as given).
    pub file: String,
    /// The line, from 1.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// Element type names a profile may use.
pub const ELEMENTS: [&str; 11] = [
    "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "bytes",
];

/// A set of measurements.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    entries: Vec<Entry>,
}

impl Profile {
    /// A profile of `entries`.
    pub fn new(entries: Vec<Entry>) -> Profile {
        Profile { entries }
    }

    /// Its entries.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Parses the text of profile `file`.
    ///
    /// # Errors
    /// [`ProfileError`] at the first line that is not version 1's header
    /// (a foreign or truncated file: line 1) or not a valid entry.
    pub fn parse(text: &str, file: &str) -> Result<Profile, ProfileError> {
        let error = |line: usize, what: String| ProfileError {
            file: file.to_string(),
            line,
            what,
        };
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        match lines.next() {
            Some((_, HEADER)) => {}
            Some((n, l)) if l.starts_with("onesided-profile ") => {
                return Err(error(
                    n,
                    format!(
                        "version {:?} is not supported (this reads {HEADER:?})",
                        &l[17..]
                    ),
                ));
            }
            Some((n, _)) => {
                return Err(error(
                    n,
                    format!("not a onesided profile (the first line must be {HEADER:?})"),
                ))
            }
            None => return Err(error(1, "empty file".into())),
        }
        let mut entries = Vec::new();
        for (n, line) in lines {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            entries.push(parse_entry(line).map_err(|what| error(n, what))?);
        }
        Ok(Profile { entries })
    }

    /// The profile as text in version 1's format (what [`Profile::parse`]
    /// reads back).
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{HEADER}\n# collective algorithm ranks ranks_per_host element bytes median_us\n"
        );
        for e in &self.entries {
            let _ = writeln!(
                out,
                "{} {} {} {} {} {} {}",
                e.collective.name(),
                e.algorithm,
                e.geometry.ranks,
                e.geometry.ranks_per_host,
                e.element,
                e.bytes,
                // Three decimals (nanoseconds), without trailing zeros.
                format!("{:.3}", e.us)
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            );
        }
        out
    }

    /// The entries measured at `geometry` itself (elsewhere selection
    /// goes by the cost model, whose parameters every entry informs:
    /// another geometry's times say little of this one's choice, a
    /// one-host geometry's `shared` nothing at all).
    pub fn for_geometry(&self, geometry: Geometry) -> Profile {
        Profile {
            entries: (self.entries.iter())
                .filter(|e| e.geometry == geometry)
                .cloned()
                .collect(),
        }
    }

    /// The estimated time of `algorithm` for `collective` on `bytes` of
    /// `element`: interpolated in log-log between the measured sizes
    /// around it; below the smallest measured size, that size's time;
    /// above the largest, that time scaled by the size ratio. Entries of
    /// the element itself are used when there are any, else those of any
    /// element. `None` without entries.
    pub fn estimate(
        &self,
        collective: Collective,
        algorithm: &str,
        element: &str,
        bytes: u64,
    ) -> Option<f64> {
        let of = |want: Option<&str>| -> Vec<(u64, f64)> {
            let mut points: Vec<(u64, f64)> = self
                .entries
                .iter()
                .filter(|e| e.collective == collective && e.algorithm == algorithm)
                .filter(|e| want.is_none_or(|w| e.element == w))
                .map(|e| (e.bytes, e.us))
                .collect();
            points.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            points.dedup_by_key(|p| p.0);
            points
        };
        let mut points = of(Some(element));
        if points.is_empty() {
            points = of(None);
        }
        interpolate(&points, bytes)
    }

    /// The fastest of `candidates` on `bytes` of `element` by
    /// [`Profile::estimate`] (ties to the earlier candidate); `None` when
    /// no candidate has entries.
    pub fn choose(&self, element: &str, bytes: u64, candidates: &[Algorithm]) -> Option<Algorithm> {
        let mut best: Option<(Algorithm, f64)> = None;
        for &c in candidates {
            if let Some(t) = self.estimate(c.collective(), c.name(), element, bytes) {
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((c, t));
                }
            }
        }
        best.map(|(c, _)| c)
    }

    /// Monitoring: folds a measured time into the entry at this point (a
    /// moving average, weight 1/4 to the new time), or adds the point
    /// (up to [`MAX_POINTS`] sizes per algorithm and element, then the
    /// nearest size in log scale takes it).
    pub fn record(
        &mut self,
        collective: Collective,
        algorithm: &str,
        geometry: Geometry,
        element: &str,
        bytes: u64,
        us: f64,
    ) {
        if !(us.is_finite() && us > 0.0) {
            return;
        }
        let same = |e: &Entry| {
            e.collective == collective && e.algorithm == algorithm && e.element == element
        };
        let log = |b: u64| (b.max(1) as f64).log2();
        let points = self.entries.iter().filter(|e| same(e)).count();
        let at = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| same(e))
            .min_by(|(_, a), (_, b)| {
                (log(a.bytes) - log(bytes))
                    .abs()
                    .total_cmp(&(log(b.bytes) - log(bytes)).abs())
            })
            .map(|(i, e)| (i, e.bytes == bytes));
        match at {
            Some((i, exact)) if exact || points >= MAX_POINTS => {
                let e = &mut self.entries[i];
                e.us = 0.75 * e.us + 0.25 * us;
            }
            _ => self.entries.push(Entry {
                collective,
                algorithm: algorithm.to_string(),
                geometry,
                element: element.to_string(),
                bytes,
                us,
            }),
        }
    }

    /// Failure: drops every entry of `algorithm` for `collective`, so it is
    /// not chosen again.
    pub fn remove(&mut self, collective: Collective, algorithm: &str) {
        self.entries
            .retain(|e| !(e.collective == collective && e.algorithm == algorithm));
    }
}

/// Sizes kept per (collective, algorithm, element) by monitoring.
pub const MAX_POINTS: usize = 64;

fn parse_entry(line: &str) -> Result<Entry, String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [collective, algorithm, ranks, per_host, element, bytes, us] = fields[..] else {
        return Err(format!(
            "expected 7 fields, found {} (truncated?)",
            fields.len()
        ));
    };
    let collective = Collective::from_name(collective)
        .ok_or_else(|| format!("unknown collective {collective:?}"))?;
    if algorithm.is_empty()
        || !algorithm
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(format!("bad algorithm name {algorithm:?}"));
    }
    let number = |what: &str, v: &str| -> Result<u64, String> {
        v.parse()
            .map_err(|_| format!("{what} {v:?} is not a number"))
    };
    let ranks =
        u32::try_from(number("ranks", ranks)?).map_err(|_| "ranks too large".to_string())?;
    let per_host = u32::try_from(number("ranks per host", per_host)?)
        .map_err(|_| "ranks per host too large".to_string())?;
    if ranks == 0 || per_host == 0 || per_host > ranks {
        return Err(format!("bad geometry: {ranks} ranks, {per_host} per host"));
    }
    if !ELEMENTS.contains(&element) {
        return Err(format!("unknown element type {element:?}"));
    }
    let bytes = number("bytes", bytes)?;
    let us: f64 = us
        .parse()
        .map_err(|_| format!("time {us:?} is not a number"))?;
    if !(us.is_finite() && us > 0.0) {
        return Err(format!("time {us} is not positive"));
    }
    Ok(Entry {
        collective,
        algorithm: algorithm.to_string(),
        geometry: Geometry {
            ranks,
            ranks_per_host: per_host,
        },
        element: element.to_string(),
        bytes,
        us,
    })
}

/// Log-log interpolation over `points` (sorted by size, distinct sizes).
fn interpolate(points: &[(u64, f64)], bytes: u64) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    if bytes <= first.0 {
        return Some(first.1);
    }
    if bytes >= last.0 {
        return Some(last.1 * bytes as f64 / (last.0.max(1)) as f64);
    }
    let i = points.partition_point(|p| p.0 < bytes);
    if points[i].0 == bytes {
        return Some(points[i].1);
    }
    let ((b1, t1), (b2, t2)) = (points[i - 1], points[i]);
    let x = |b: u64| (b.max(1) as f64).ln();
    let f = (x(bytes) - x(b1)) / (x(b2) - x(b1));
    Some((t1.ln() + (t2.ln() - t1.ln()) * f).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Allreduce;

    const RING: Algorithm = Algorithm::Allreduce(Allreduce::Ring);
    const RD: Algorithm = Algorithm::Allreduce(Allreduce::RecursiveDoubling);

    const TEXT: &str = "onesided-profile 1
# a comment
allreduce recursive_doubling 4 2 f64 8 2.0
allreduce recursive_doubling 4 2 f64 1024 4.0
allreduce ring 4 2 f64 8 10.0
allreduce ring 4 2 f64 1024 3.0

allreduce ring 2 2 f64 8 1.0
bcast binomial 2 2 bytes 8 0.5
alltoallv pairwise 4 2 bytes 64 7.5
";

    fn g(ranks: u32, ranks_per_host: u32) -> Geometry {
        Geometry {
            ranks,
            ranks_per_host,
        }
    }

    #[test]
    fn parses_and_writes_back() {
        let p = Profile::parse(TEXT, "p.txt").unwrap();
        assert_eq!(p.entries().len(), 7);
        assert_eq!(
            p.entries()[6].collective,
            Collective::Alltoall,
            "alltoallv shares alltoall's entries"
        );
        assert_eq!(Profile::parse(&p.to_text(), "again").unwrap(), p);
    }

    #[test]
    fn malformed_truncated_and_foreign_files_name_file_and_line() {
        let cases = [
            ("", 1, "empty"),
            ("#!/bin/sh\necho hi\n", 1, "not a onesided profile"),
            ("onesided-profile 2\n", 1, "version"),
            (
                "onesided-profile 1\nallreduce ring 4 2 f64 8\n",
                2,
                "expected 7 fields",
            ),
            (
                "onesided-profile 1\n\nallreduce ring 4 2 f64 8 x\n",
                3,
                "time",
            ),
            (
                "onesided-profile 1\nallsum ring 4 2 f64 8 1\n",
                2,
                "unknown collective",
            ),
            (
                "onesided-profile 1\nbcast Ring 4 2 f64 8 1\n",
                2,
                "algorithm",
            ),
            (
                "onesided-profile 1\nbcast ring 2 4 f64 8 1\n",
                2,
                "geometry",
            ),
            (
                "onesided-profile 1\nbcast ring 4 2 f128 8 1\n",
                2,
                "element",
            ),
            (
                "onesided-profile 1\nbcast ring 4 2 f64 8 -1\n",
                2,
                "not positive",
            ),
        ];
        for (text, line, what) in cases {
            let e = Profile::parse(text, "x.profile").unwrap_err();
            assert_eq!(
                (e.file.as_str(), e.line),
                ("x.profile", line),
                "{text:?}: {e}"
            );
            assert!(e.to_string().contains(what), "{text:?}: {e}");
            assert!(e.to_string().starts_with("profile x.profile line"), "{e}");
        }
    }

    #[test]
    fn geometry_filter_keeps_the_exact_geometry_only() {
        let p = Profile::parse(TEXT, "p").unwrap();
        let exact = p.for_geometry(g(4, 2));
        assert!(exact.entries().iter().all(|e| e.geometry == g(4, 2)));
        assert_eq!(
            exact
                .entries()
                .iter()
                .filter(|e| e.collective == Collective::Allreduce)
                .count(),
            4
        );
        // 8 ranks, 2 per host, were not measured: nothing (the cost
        // model decides there).
        assert!(p.for_geometry(g(8, 2)).entries().is_empty());
        let small = p.for_geometry(g(2, 2));
        assert!(small.entries().iter().all(|e| e.geometry == g(2, 2)));
        assert!(!small.entries().is_empty());
    }

    #[test]
    fn estimates_interpolate_in_log_log_and_choose_the_fastest() {
        let p = Profile::parse(TEXT, "p").unwrap().for_geometry(g(4, 2));
        let rd = |b| {
            p.estimate(Collective::Allreduce, "recursive_doubling", "f64", b)
                .unwrap()
        };
        assert_eq!(rd(8), 2.0);
        assert_eq!(rd(1), 2.0, "below the smallest size: its time");
        assert!((rd(90) - 2.0 * 2f64.powf((90f64 / 8.0).ln() / (128f64).ln())).abs() < 1e-9);
        assert_eq!(rd(4096), 16.0, "above the largest: scaled by size");
        // Other element types fall back to any element's entries.
        assert_eq!(
            p.estimate(Collective::Allreduce, "ring", "i32", 8),
            Some(10.0)
        );
        let both = [RING, RD];
        assert_eq!(p.choose("f64", 8, &both), Some(RD));
        assert_eq!(p.choose("f64", 1024, &both), Some(RING));
        // Where the two curves cross (log-log): somewhere in between.
        let switch = (8..=1024).find(|&b| p.choose("f64", b, &both) == Some(RING));
        assert!(switch.is_some_and(|b| b > 8 && b < 1024));
        assert_eq!(p.choose("f64", 8, &[Allreduce::Rabenseifner.into()]), None);
    }

    #[test]
    fn monitoring_updates_and_failures_remove() {
        let mut p = Profile::parse(TEXT, "p").unwrap().for_geometry(g(4, 2));
        p.record(Collective::Allreduce, "ring", g(4, 2), "f64", 8, 2.0);
        assert_eq!(
            p.estimate(Collective::Allreduce, "ring", "f64", 8),
            Some(8.0),
            "0.75 * 10 + 0.25 * 2"
        );
        p.record(Collective::Allreduce, "ring", g(4, 2), "f64", 64, 5.0);
        assert_eq!(
            p.estimate(Collective::Allreduce, "ring", "f64", 64),
            Some(5.0),
            "a new point"
        );
        p.record(Collective::Allreduce, "ring", g(4, 2), "f64", 64, f64::NAN);
        assert_eq!(
            p.estimate(Collective::Allreduce, "ring", "f64", 64),
            Some(5.0),
            "nonsense ignored"
        );
        let both = [RING, RD];
        assert_eq!(p.choose("f64", 1024, &both), Some(RING));
        p.remove(Collective::Allreduce, "ring");
        assert_eq!(p.choose("f64", 1024, &both), Some(RD));
        // Bounded: past MAX_POINTS sizes the nearest point takes new times.
        for i in 0..200u64 {
            p.record(
                Collective::Bcast,
                "binomial",
                g(4, 2),
                "u8",
                1 << (i % 40) | i,
                1.0,
            );
        }
        let kept = p
            .entries()
            .iter()
            .filter(|e| e.collective == Collective::Bcast && e.element == "u8")
            .count();
        assert_eq!(kept, MAX_POINTS);
    }
}
