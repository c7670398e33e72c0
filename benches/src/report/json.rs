//! A run's rows as JSON lines (serde_json), each with where it ran.

use super::{Row, Setup};

/// A JSON row's fields, in their order (serialised by `serde_json`).
#[derive(serde::Serialize)]
struct JsonRow<'a> {
    suite: &'a str,
    case: String,
    ranks: u32,
    provider: &'a str,
    onesided_us: Option<f64>,
    peer_us: Option<f64>,
    speedup: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    algorithm: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    omega: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_omega: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iterations: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_iterations: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_messages_in_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_bytes_in_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_messages_out_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    master_bytes_out_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<&'a str>,
    cpu: &'a str,
    cores: usize,
    oversubscribed: bool,
    nolocal: bool,
    onesided_libfabric: &'a str,
    peer_libfabric: &'a str,
    mpich: &'a str,
}

/// One JSON object on one line (no trailing newline) with the keys
/// `suite`, `case`, `ranks`, `provider`, `onesided_us`, `peer_us`, `speedup`,
/// `algorithm` (where onesided chose one), `omega`, `peer_omega`,
/// `iterations` and `peer_iterations` (background redistributions), `master_messages_in_per_s`,
/// `master_bytes_in_per_s`, `master_messages_out_per_s` and
/// `master_bytes_out_per_s` (a reduction master's load), `note` (why the
/// sides' guarantees differ, [`super::mark_guarantees`]), then where it ran: `cpu`,
/// `cores`, `oversubscribed`, `nolocal`, `onesided_libfabric`,
/// `peer_libfabric`, `mpich`, in that order; a non-finite number is
/// written as `null`.
pub fn json_line(row: &Row, setup: &Setup) -> String {
    let finite = |v: f64| v.is_finite().then_some(v);
    let overlap = |f: fn(&super::Overlap) -> f64| row.overlap.as_ref().map(f).and_then(finite);
    let load = |f: fn(&super::MasterLoad) -> f64| row.master_load.as_ref().map(f).and_then(finite);
    let json = JsonRow {
        suite: &row.suite,
        case: row.case(),
        ranks: row.ranks,
        provider: &row.provider,
        onesided_us: finite(row.onesided_us),
        peer_us: finite(row.peer_us),
        speedup: finite(row.speedup),
        algorithm: row.algorithm.as_deref(),
        omega: overlap(|o| o.omega[0]),
        peer_omega: overlap(|o| o.omega[1]),
        iterations: overlap(|o| o.iterations[0]),
        peer_iterations: overlap(|o| o.iterations[1]),
        master_messages_in_per_s: load(|l| l.messages_in),
        master_bytes_in_per_s: load(|l| l.bytes_in),
        master_messages_out_per_s: load(|l| l.messages_out),
        master_bytes_out_per_s: load(|l| l.bytes_out),
        note: row.note.as_deref(),
        cpu: &setup.cpu,
        cores: setup.cores,
        oversubscribed: row.ranks as usize > setup.cores,
        nolocal: setup.nolocal,
        onesided_libfabric: &setup.onesided_libfabric,
        peer_libfabric: &setup.peer_libfabric,
        mpich: &setup.mpich,
    };
    // Strings and finite numbers: serialising cannot fail.
    serde_json::to_string(&json).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{row, setup};
    #[test]
    fn json_lines() {
        const WHERE: &str = r#","cpu":"AMD EPYC","cores":2,"oversubscribed":true,"nolocal":true,"onesided_libfabric":"2.5 /v/libfabric.so.1","peer_libfabric":"2.5 /v/libfabric.so.1","mpich":"5.0.2"}"#;
        let setup = setup();
        assert_eq!(
            json_line(&row("get", "lock_all_flush", 4096, 2.0, 3.0), &setup),
            format!(
                r#"{{"suite":"get","case":"lock_all_flush 4KiB","ranks":4,"provider":"shm","onesided_us":2.0,"peer_us":3.0,"speedup":1.5{WHERE}"#
            )
        );
        let odd = row("get", "a\"b\\c\nd\u{1}", 0, f64::NAN, 0.25);
        assert_eq!(
            json_line(&odd, &setup),
            format!(
                r#"{{"suite":"get","case":"a\"b\\c\nd\u0001","ranks":4,"provider":"shm","onesided_us":null,"peer_us":0.25,"speedup":null{WHERE}"#
            )
        );
        let mut chosen = row("collectives", "allreduce", 8, 1.0, 2.0);
        chosen.algorithm = Some("ring".into());
        let line = json_line(&chosen, &setup);
        assert!(
            line.contains(r#""speedup":2.0,"algorithm":"ring","cpu""#),
            "{line}"
        );
    }
}
