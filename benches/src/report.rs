//! The output side of `onesided-bench`: the measured cases, each run on
//! both sides (onesided and the MPICH peer), and where they ran; their
//! text table ([`table()`]), JSON lines ([`json_line`]) and SVG plots
//! ([`svg_plots`], [`bar_plots`]), each in a module of its own.
//! Everything is pure formatting except the plots, which write files.

mod json;
mod svg;
mod table;

pub use json::json_line;
pub use svg::{bar_plots, count_plot, log_log_plot, svg_plots, LogLine};
pub use table::table;

/// One measured case: both sides' median microseconds, and the speedup
/// taken round by round.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The suite: "window", "get", "put", "atomic", "ibarrier", "collectives".
    pub suite: String,
    /// The case without its size, e.g. "lock_all_flush".
    pub series: String,
    /// The message size in bytes (0 when the case has no size).
    pub bytes: u64,
    /// The number of ranks of the run.
    pub ranks: u32,
    /// The fabric provider: "shm" or "tcp".
    pub provider: String,
    /// Median time of onesided, in microseconds.
    pub onesided_us: f64,
    /// Median time of the peer (MPICH), in microseconds.
    pub peer_us: f64,
    /// The median over rounds of each round's `peer / onesided`
    /// ([`speedup`]): a round's two sides run one after the other, so the
    /// ratio is taken pair by pair (these machines' speed drifts between
    /// rounds more than between the two sides of one). The malleable
    /// suite's rows, whose cases mix runs (spawns over methods, equation
    /// 1), take the ratio of the medians.
    pub speedup: f64,
    /// The algorithm onesided chose, where it chooses (collectives).
    pub algorithm: Option<String>,
    /// A background redistribution's cost to the application
    /// (malleable), each side's.
    pub overlap: Option<Overlap>,
    /// The reduction master's control traffic (reduce).
    pub master_load: Option<MasterLoad>,
    /// Why the two sides' times measure different guarantees, when they
    /// do ([`mark_guarantees`]): the table marks the row and says why.
    pub note: Option<String>,
}

/// Put under lock_all with a flush per operation: onesided's flush
/// completes at the target (`MPI_Win_flush`'s meaning), which takes a round
/// trip; a peer that returns faster than its own get of the same size (a
/// round trip) cannot have waited for the target.
pub const FLUSH_NOT_DELIVERY: &str = "MPICH's put + MPI_Win_flush returned faster than its get of \
     the same size (a round trip): completion at the origin, not at the target (compare \
     lock_all_flush_local)";

/// Marks the rows whose sides give different guarantees: each put
/// `lock_all_flush` row of up to 4 KiB (where a transfer is mostly its
/// latency; above, MPICH's get and put move data at different speeds)
/// whose peer time is under 3/4 of the peer's get `lock_all_flush` of the
/// same size, ranks and provider.
pub fn mark_guarantees(rows: &mut [Row]) {
    let gets: Vec<(u64, u32, String, f64)> = (rows.iter())
        .filter(|r| r.suite == "get" && r.series.starts_with("lock_all_flush"))
        .filter(|r| !r.series.contains("flush_local"))
        .map(|r| (r.bytes, r.ranks, r.provider.clone(), r.peer_us))
        .collect();
    for row in rows.iter_mut() {
        if row.suite != "put" || !row.series.starts_with("lock_all_flush") {
            continue;
        }
        if row.series.contains("flush_local") || row.bytes > 4096 {
            continue;
        }
        let round_trip = (gets.iter())
            .find(|(b, n, p, _)| *b == row.bytes && *n == row.ranks && *p == row.provider)
            .map(|g| g.3);
        if round_trip.is_some_and(|t| row.peer_us < 0.75 * t) {
            row.note = Some(FLUSH_NOT_DELIVERY.to_string());
        }
    }
}

/// What a background redistribution cost the application, onesided's
/// and the peer's (medians over rounds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Overlap {
    /// Omega: iteration time during it over without, `[onesided, peer]`.
    pub omega: [f64; 2],
    /// Iterations it overlapped (N_it), `[onesided, peer]`.
    pub iterations: [f64; 2],
}

/// A grouped bar chart: a bar per series in each group (drawn by
/// [`bar_plots`]); a missing value leaves its bar out.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// The file's name without the prefix and `.svg`.
    pub name: String,
    /// The title.
    pub title: String,
    /// The value axis's description.
    pub y_desc: String,
    /// A logarithmic value axis.
    pub log: bool,
    /// The groups along the x axis.
    pub groups: Vec<String>,
    /// Each series' name and its value per group.
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// A reduction master's control traffic, per second over a run (the
/// study's table 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MasterLoad {
    /// Messages received.
    pub messages_in: f64,
    /// Bytes received.
    pub bytes_in: f64,
    /// Messages sent.
    pub messages_out: f64,
    /// Bytes sent.
    pub bytes_out: f64,
}

/// Where a run ran: said above its table and in every JSON row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Setup {
    /// The CPU model (`/proc/cpuinfo`'s model name).
    pub cpu: String,
    /// The cores the run may use.
    pub cores: usize,
    /// Ranks per side.
    pub ranks: u32,
    /// The fabric provider.
    pub provider: String,
    /// Every rank its own host (`--nolocal`).
    pub nolocal: bool,
    /// The libfabric onesided's side loaded: `MAJOR.MINOR PATH`.
    pub onesided_libfabric: String,
    /// The libfabric MPICH loaded: `MAJOR.MINOR PATH`.
    pub peer_libfabric: String,
    /// MPICH's version.
    pub mpich: String,
}

impl Setup {
    /// Whether the ranks outnumber the cores.
    pub fn oversubscribed(&self) -> bool {
        self.ranks as usize > self.cores
    }

    /// The lines above the table, each starting with `# `.
    pub fn lines(&self) -> String {
        let unknown = |s: &str| if s.is_empty() { "unknown" } else { s }.to_string();
        format!(
            "# {} ({} cores), {} ranks{}, provider {}{}\n# onesided on libfabric {}\n# MPICH {} on libfabric {}\n",
            unknown(&self.cpu),
            self.cores,
            self.ranks,
            if self.oversubscribed() { " (ranks outnumber cores)" } else { "" },
            self.provider,
            if self.nolocal { ", every rank its own host" } else { "" },
            unknown(&self.onesided_libfabric),
            unknown(&self.mpich),
            unknown(&self.peer_libfabric),
        )
    }
}

/// `peer_us / onesided_us` (`f64::NAN` when `onesided_us` is not > 0).
pub fn speedup(onesided_us: f64, peer_us: f64) -> f64 {
    if onesided_us > 0.0 {
        peer_us / onesided_us
    } else {
        f64::NAN
    }
}

impl Row {
    /// The table's and JSON's `case`: the series, then the size in binary
    /// units when `bytes > 0` ("lock_all_flush 8B", "bandwidth 1MiB"); sizes
    /// that are not exact multiples of 1024 are written in B ("1000B").
    pub fn case(&self) -> String {
        if self.bytes == 0 {
            self.series.clone()
        } else {
            format!("{} {}", self.series, size_label(self.bytes))
        }
    }
}

/// "8B", "4KiB", "1MiB", "1000B": the largest binary unit dividing `bytes`.
pub fn size_label(bytes: u64) -> String {
    let mut label = format!("{bytes}B");
    let mut value = bytes;
    for unit in ["KiB", "MiB", "GiB"] {
        if value == 0 || !value.is_multiple_of(1024) {
            break;
        }
        value /= 1024;
        label = format!("{value}{unit}");
    }
    label
}

/// Rows and a setup for the tests of this module's parts.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    pub(crate) fn row(
        suite: &str,
        series: &str,
        bytes: u64,
        onesided_us: f64,
        peer_us: f64,
    ) -> Row {
        Row {
            suite: suite.to_string(),
            series: series.to_string(),
            bytes,
            ranks: 4,
            provider: "shm".to_string(),
            onesided_us,
            peer_us,
            speedup: speedup(onesided_us, peer_us),
            algorithm: None,
            overlap: None,
            master_load: None,
            note: None,
        }
    }

    pub(crate) fn setup() -> Setup {
        Setup {
            cpu: "AMD EPYC".into(),
            cores: 2,
            ranks: 3,
            provider: "tcp".into(),
            nolocal: true,
            onesided_libfabric: "2.5 /v/libfabric.so.1".into(),
            peer_libfabric: "2.5 /v/libfabric.so.1".into(),
            mpich: "5.0.2".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixtures::{row, setup};

    #[test]
    fn a_put_flush_faster_than_a_round_trip_is_marked() {
        let mut rows = vec![
            row("get", "lock_all_flush", 8, 14.0, 13.0),
            row("get", "lock_all_flush", 4096, 18.0, 15.0),
            row("put", "lock_all_flush", 8, 15.0, 6.7),
            row("put", "lock_all_flush", 4096, 19.0, 15.4),
            row("put", "lock_all_flush_local", 8, 15.0, 6.7),
            row("put", "lock_all_flush", 64, 15.0, 6.7),
            row("get", "lock_all_flush", 1 << 20, 700.0, 650.0),
            row("put", "lock_all_flush", 1 << 20, 360.0, 290.0),
        ];
        mark_guarantees(&mut rows);
        let marked: Vec<bool> = rows.iter().map(|r| r.note.is_some()).collect();
        // No get of 64 B to compare with: not marked.
        // Nor above 4 KiB (bandwidth, not a round trip).
        assert_eq!(
            marked,
            [false, false, true, false, false, false, false, false]
        );
        let text = table::table(&rows);
        assert!(text.contains("0.45x†"), "{text}");
        assert_eq!(text.matches(FLUSH_NOT_DELIVERY).count(), 1, "{text}");
    }

    #[test]
    fn case_labels() {
        let label = |bytes| row("get", "lock_all_flush", bytes, 1.0, 1.0).case();
        assert_eq!(label(8), "lock_all_flush 8B");
        assert_eq!(label(4096), "lock_all_flush 4KiB");
        assert_eq!(label(1 << 20), "lock_all_flush 1MiB");
        assert_eq!(label(1 << 30), "lock_all_flush 1GiB");
        assert_eq!(label(1000), "lock_all_flush 1000B");
        assert_eq!(label(1536), "lock_all_flush 1536B");
        assert_eq!(label(0), "lock_all_flush");
    }

    #[test]
    fn speedups() {
        assert_eq!(speedup(2.0, 5.0), 2.5);
        assert!(speedup(0.0, 5.0).is_nan());
        assert!(speedup(f64::NAN, 5.0).is_nan());
    }

    #[test]
    fn the_setup_says_where_a_run_ran() {
        let lines = setup().lines();
        assert_eq!(
            lines,
            "# AMD EPYC (2 cores), 3 ranks (ranks outnumber cores), provider tcp, every rank its own host\n\
             # onesided on libfabric 2.5 /v/libfabric.so.1\n\
             # MPICH 5.0.2 on libfabric 2.5 /v/libfabric.so.1\n"
        );
        let unknown = Setup::default().lines();
        assert!(
            unknown.starts_with("# unknown (0 cores), 0 ranks, provider \n"),
            "{unknown}"
        );
    }
}
