//! The text table of a run's rows.

use std::fmt::Write as _;

use super::Row;

/// Two decimals; three significant digits below 1 ("0.071"); "-" if not finite.
pub(crate) fn fmt_time(us: f64) -> String {
    if !us.is_finite() {
        return "-".to_string();
    }
    let mag = us.abs();
    let mut decimals = 2;
    if mag > 0.0 && mag < 1.0 {
        decimals = (2 - mag.log10().floor() as i32).clamp(2, 12) as usize;
    }
    let mut text = format!("{us:.decimals$}");
    while decimals > 2 && text.ends_with('0') {
        text.pop();
        decimals -= 1;
    }
    text
}

pub(crate) fn fmt_speedup(speedup: f64) -> String {
    if speedup.is_finite() {
        format!("{speedup:.2}x")
    } else {
        "-".to_string()
    }
}

/// A fixed-width text table with the header
/// `suite case ranks provider onesided_us peer_us speedup`, and `omega
/// peer_omega n_it peer_n_it` when a row has them (background
/// redistributions): text columns
/// left-aligned, numbers right-aligned, times with 2 decimals (3 significant
/// digits below 1), speedup with 2 decimals and "x"; "-" for a non-finite
/// number. A row whose sides give different guarantees has `†` after its
/// speedup, and the reasons follow the table. Every line, the header
/// included, ends with a newline.
pub fn table(rows: &[Row]) -> String {
    const HEADER: [&str; 11] = [
        "suite",
        "case",
        "ranks",
        "provider",
        "onesided_us",
        "peer_us",
        "speedup",
        "omega",
        "peer_omega",
        "n_it",
        "peer_n_it",
    ];
    const LEFT_ALIGNED: [bool; 11] = [
        true, true, false, true, false, false, false, false, false, false, false,
    ];
    let columns = match rows.iter().any(|r| r.overlap.is_some()) {
        true => 11,
        false => 7,
    };
    let optional = |v: Option<f64>, decimals: usize| match v {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "-".to_string(),
    };
    let mut lines = vec![HEADER.map(String::from)[..columns].to_vec()];
    lines.extend(rows.iter().map(|r| {
        [
            r.suite.clone(),
            r.case(),
            r.ranks.to_string(),
            r.provider.clone(),
            fmt_time(r.onesided_us),
            fmt_time(r.peer_us),
            match r.note {
                Some(_) => format!("{}†", fmt_speedup(r.speedup)),
                None => fmt_speedup(r.speedup),
            },
            optional(r.overlap.map(|o| o.omega[0]), 2),
            optional(r.overlap.map(|o| o.omega[1]), 2),
            optional(r.overlap.map(|o| o.iterations[0]), 0),
            optional(r.overlap.map(|o| o.iterations[1]), 0),
        ][..columns]
            .to_vec()
    }));
    let mut widths = [0; 11];
    for line in &lines {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in &lines {
        for (i, cell) in line.iter().enumerate() {
            let width = widths[i];
            if i > 0 {
                out.push_str("  ");
            }
            if LEFT_ALIGNED[i] {
                let _ = write!(out, "{cell:<width$}");
            } else {
                let _ = write!(out, "{cell:>width$}");
            }
        }
        out.push('\n');
    }
    let mut notes: Vec<&str> = rows.iter().filter_map(|r| r.note.as_deref()).collect();
    notes.dedup();
    for note in notes {
        let _ = writeln!(out, "† {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::row;
    #[test]
    fn table_format() {
        let t = table(&[row("get", "lock_all_flush", 8, 0.071, 1.5)]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            [
                "suite  case               ranks  provider  onesided_us  peer_us  speedup",
                "get    lock_all_flush 8B      4  shm             0.071     1.50   21.13x",
            ]
        );
        assert_eq!(fmt_time(0.5), "0.50");
        assert_eq!(fmt_time(0.0712), "0.0712");
        assert_eq!(fmt_time(123.456), "123.46");
        assert_eq!(fmt_time(0.0), "0.00");
        assert_eq!(fmt_time(f64::NAN), "-");
    }
}
