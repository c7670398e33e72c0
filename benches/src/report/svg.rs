//! A run's rows as SVG plots: time and speedup against message size per
//! suite, a bar chart for suites without sizes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::table::fmt_speedup;
use super::{size_label, Row};

/// The side the benchmarks compare against, as named in plots.
const PEER: &str = "MPICH";
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];
/// Approximate width of one character of 12px sans-serif text.
const CHAR_W: f64 = 7.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 55.0;
const PLOT_W: f64 = 560.0;
const PLOT_H: f64 = 340.0;

/// Groups items by key, keeping the order of first appearance.
fn group<'a, K: PartialEq>(
    rows: impl Iterator<Item = &'a Row>,
    key: impl Fn(&'a Row) -> K,
) -> Vec<(K, Vec<&'a Row>)> {
    let mut groups: Vec<(K, Vec<&'a Row>)> = Vec::new();
    for row in rows {
        let k = key(row);
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, members)) => members.push(row),
            None => groups.push((k, vec![row])),
        }
    }
    groups
}

fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes SVG plots for `rows` under `dir` (created if missing), one set per
/// suite, in the order suites first appear in `rows`.
///
/// A suite with at least one series with two or more distinct sizes gets
/// `{prefix}-{suite}-time.svg` (time against size, log2/log10 axes, onesided
/// solid and MPICH dashed in the series' colour) and
/// `{prefix}-{suite}-speedup.svg` (speedup against size, linear axis from 0,
/// reference line at 1.0); rows of such a suite without a size are not
/// plotted. Any other suite gets one `{prefix}-{suite}-speedup.svg` bar chart
/// with one bar per case. Values that cannot be drawn (non-finite, or not
/// positive on a log axis) are skipped. Existing files are overwritten; an
/// empty `prefix` leaves out the `{prefix}-`; characters other than ASCII
/// letters, digits, `-`, `_` and `.` in the names become `_`.
/// Returns the paths written (time before speedup within a suite).
///
/// # Errors
///
/// The I/O error of creating the directory or writing a file.
pub fn svg_plots(rows: &[Row], dir: &Path, prefix: &str) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let stem_prefix = if prefix.is_empty() {
        String::new()
    } else {
        format!("{}-", file_part(prefix))
    };
    let mut written = Vec::new();
    for (suite, suite_rows) in group(rows.iter(), |r| r.suite.as_str()) {
        let Some(first) = suite_rows.first() else {
            continue;
        };
        let context = format!("({} ranks, {})", first.ranks, first.provider);
        let mut series = group(suite_rows.iter().copied().filter(|r| r.bytes > 0), |r| {
            r.series.as_str()
        });
        for (_, members) in &mut series {
            members.sort_by_key(|r| r.bytes);
            members.dedup_by_key(|r| r.bytes);
        }
        let stem = format!("{stem_prefix}{}", file_part(suite));
        let speedup_title = format!("{suite}: speedup of onesided over {PEER} {context}");
        let plots = if series.iter().any(|(_, members)| members.len() >= 2) {
            let time_title = format!("{suite}: time per operation {context}");
            vec![
                (format!("{stem}-time.svg"), time_plot(&time_title, &series)),
                (
                    format!("{stem}-speedup.svg"),
                    speedup_plot(&speedup_title, &series),
                ),
            ]
        } else {
            vec![(
                format!("{stem}-speedup.svg"),
                bar_chart(&speedup_title, &suite_rows),
            )]
        };
        for (name, svg) in plots {
            let path = dir.join(name);
            std::fs::write(&path, svg)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// An axis: its range, whether it is logarithmic, and its labelled ticks.
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<(f64, String)>,
}

impl Axis {
    /// Where `v` lies between `lo` (0) and `hi` (1).
    fn frac(&self, v: f64) -> f64 {
        let t = |a: f64| if self.log { a.log10() } else { a };
        let span = t(self.hi) - t(self.lo);
        if span > 0.0 {
            (t(v) - t(self.lo)) / span
        } else {
            0.5
        }
    }
}

/// The plot area in pixels.
struct Frame {
    left: f64,
    top: f64,
    w: f64,
    h: f64,
}

impl Frame {
    fn px(&self, x: &Axis, v: f64) -> f64 {
        self.left + x.frac(v) * self.w
    }
    fn py(&self, y: &Axis, v: f64) -> f64 {
        self.top + (1.0 - y.frac(v)) * self.h
    }
}

/// A log2 axis of sizes, powers of two from below the smallest to above the
/// largest positive size, labelled "8B", "1KiB", ...
fn size_axis(sizes: impl Iterator<Item = u64>) -> Axis {
    let (mut min, mut max) = (u64::MAX, 0);
    for s in sizes.filter(|&s| s > 0) {
        min = min.min(s);
        max = max.max(s);
    }
    if max == 0 {
        (min, max) = (1, 2);
    }
    let mut lo = 63 - min.leading_zeros();
    let mut hi = (63 - max.leading_zeros() + u32::from(!max.is_power_of_two())).min(63);
    if hi <= lo {
        if lo < 63 {
            hi = lo + 1;
        } else {
            (lo, hi) = (62, 63);
        }
    }
    // Ticks at multiples of `step` so that both ends carry a label.
    let step = (hi - lo).div_ceil(10).max(1);
    (lo, hi) = (lo - lo % step, (hi.div_ceil(step) * step).min(63));
    let ticks = (lo..=hi)
        .filter(|e| e % step == 0)
        .map(|e| ((1u64 << e) as f64, size_label(1u64 << e)))
        .collect();
    Axis {
        lo: (1u64 << lo) as f64,
        hi: (1u64 << hi) as f64,
        log: true,
        ticks,
    }
}

/// `m * 10^k` written out: "0.1", "2", "500".
fn decade_label(m: u32, k: i32) -> String {
    let n = k.unsigned_abs() as usize;
    if k >= 0 {
        format!("{m}{}", "0".repeat(n))
    } else {
        format!("0.{}{m}", "0".repeat(n - 1))
    }
}

/// A log10 axis over the positive finite `values`, with decade ticks (and 2,
/// 5 in between when the range spans at most two decades).
fn log10_axis(values: &[f64]) -> Axis {
    let valid = values.iter().copied().filter(|v| v.is_finite() && *v > 0.0);
    let (min, max) = valid.fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let (lo, mut hi) = if max > 0.0 {
        (
            (min.log10().floor() as i32).clamp(-300, 299),
            (max.log10().ceil() as i32).clamp(-300, 300),
        )
    } else {
        (0, 1)
    };
    if hi <= lo {
        hi = lo + 1;
    }
    let step = ((hi - lo + 9) / 10).max(1);
    let mut ticks = Vec::new();
    let mut k = lo;
    while k <= hi {
        ticks.push((10f64.powi(k), decade_label(1, k)));
        if hi - lo <= 2 && k < hi {
            for m in [2, 5] {
                ticks.push((f64::from(m) * 10f64.powi(k), decade_label(m, k)));
            }
        }
        k += step;
    }
    Axis {
        lo: 10f64.powi(lo),
        hi: 10f64.powi(hi),
        log: true,
        ticks,
    }
}

/// A linear axis from 0 past `max` (and past 1), with round ticks.
fn linear_axis(max: f64) -> Axis {
    let top = if max.is_finite() {
        max.clamp(1.0, 1e300) * 1.1
    } else {
        1.1
    };
    let raw = top / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let n = (top / step).ceil().clamp(1.0, 20.0) as u32;
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()).clamp(0.0, 12.0) as usize
    };
    let ticks = (0..=n)
        .map(|i| {
            let v = f64::from(i) * step;
            (v, format!("{v:.decimals$}"))
        })
        .collect();
    Axis {
        lo: 0.0,
        hi: f64::from(n) * step,
        log: false,
        ticks,
    }
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters other than tab and newlines are not allowed in XML 1.0.
            c if u32::from(c) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn text(out: &mut String, x: f64, y: f64, anchor: &str, attrs: &str, s: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}"{attrs}>{}</text>"#,
        xml_escape(s)
    );
}

fn line(out: &mut String, (x1, y1): (f64, f64), (x2, y2): (f64, f64), attrs: &str) {
    let _ = writeln!(
        out,
        r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}"{attrs}/>"#
    );
}

fn svg_open(width: f64, height: f64, title: &str) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    out.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    text(
        &mut out,
        width / 2.0,
        22.0,
        "middle",
        r#" font-size="15""#,
        title,
    );
    out
}

/// Grid lines, frame, tick labels and axis titles.
fn draw_axes(out: &mut String, f: &Frame, x: &Axis, y: &Axis, xlabel: &str, ylabel: &str) {
    let (bottom, right) = (f.top + f.h, f.left + f.w);
    out.push_str("<g stroke=\"#dddddd\">\n");
    for (v, _) in &x.ticks {
        let px = f.px(x, *v);
        line(out, (px, f.top), (px, bottom), "");
    }
    for (v, _) in &y.ticks {
        let py = f.py(y, *v);
        line(out, (f.left, py), (right, py), "");
    }
    out.push_str("</g>\n");
    let _ = writeln!(
        out,
        r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="black"/>"#,
        f.left, f.top, f.w, f.h
    );
    out.push_str("<g font-size=\"11\">\n");
    for (v, label) in &x.ticks {
        text(out, f.px(x, *v), bottom + 16.0, "middle", "", label);
    }
    for (v, label) in &y.ticks {
        text(out, f.left - 6.0, f.py(y, *v) + 4.0, "end", "", label);
    }
    out.push_str("</g>\n");
    text(out, f.left + f.w / 2.0, bottom + 40.0, "middle", "", xlabel);
    let (yx, yy) = (16.0, f.top + f.h / 2.0);
    let rotate = format!(r#" transform="rotate(-90 {yx:.1} {yy:.1})""#);
    text(out, yx, yy, "middle", &rotate, ylabel);
}

fn marker(out: &mut String, (x, y): (f64, f64), colour: &str, hollow: bool) {
    let fill = if hollow { "white" } else { colour };
    let _ = writeln!(
        out,
        r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{fill}" stroke="{colour}" stroke-width="1.5"/>"#
    );
}

/// One plotted line: its legend label, style and points in data units.
struct Series {
    label: String,
    colour: &'static str,
    dashed: bool,
    points: Vec<(f64, f64)>,
}

fn dash(dashed: bool) -> &'static str {
    if dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

fn line_chart(title: &str, labels: (&str, &str), x: &Axis, y: &Axis, lines: &[Series]) -> String {
    let longest = lines.iter().map(|l| l.label.chars().count()).max();
    let legend_w = longest.unwrap_or(0) as f64 * CHAR_W + 50.0;
    let f = Frame {
        left: LEFT,
        top: TOP,
        w: PLOT_W,
        h: PLOT_H,
    };
    let width = LEFT + PLOT_W + 20.0 + legend_w;
    let height = (TOP + PLOT_H + BOTTOM).max(TOP + 20.0 * lines.len() as f64 + 10.0);
    let mut out = svg_open(width, height, title);
    draw_axes(&mut out, &f, x, y, labels.0, labels.1);
    if !y.log && y.hi >= 1.0 {
        let py = f.py(y, 1.0);
        line(
            &mut out,
            (f.left, py),
            (f.left + f.w, py),
            r#" stroke="black" stroke-dasharray="2 3""#,
        );
    }
    let legend_x = f.left + f.w + 20.0;
    for (i, s) in lines.iter().enumerate() {
        let style = format!(
            r#" stroke="{}" stroke-width="2"{}"#,
            s.colour,
            dash(s.dashed)
        );
        out.push_str("<g>\n");
        let pts: Vec<String> = s
            .points
            .iter()
            .map(|&(a, b)| format!("{:.1},{:.1}", f.px(x, a), f.py(y, b)))
            .collect();
        if pts.len() >= 2 {
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none"{style}/>"#,
                pts.join(" ")
            );
        }
        for &(a, b) in &s.points {
            marker(&mut out, (f.px(x, a), f.py(y, b)), s.colour, s.dashed);
        }
        let ly = TOP + 10.0 + 20.0 * i as f64;
        line(&mut out, (legend_x, ly), (legend_x + 28.0, ly), &style);
        marker(&mut out, (legend_x + 14.0, ly), s.colour, s.dashed);
        text(&mut out, legend_x + 36.0, ly + 4.0, "start", "", &s.label);
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

fn valid_log(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn time_plot(title: &str, series: &[(&str, Vec<&Row>)]) -> String {
    let rows = || series.iter().flat_map(|(_, members)| members.iter());
    let x = size_axis(rows().map(|r| r.bytes));
    let times: Vec<f64> = rows().flat_map(|r| [r.onesided_us, r.peer_us]).collect();
    let y = log10_axis(&times);
    let mut lines = Vec::new();
    for (i, (name, members)) in series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        for (side, dashed) in [("onesided", false), (PEER, true)] {
            let points = members
                .iter()
                .map(|r| {
                    (
                        r.bytes as f64,
                        if dashed { r.peer_us } else { r.onesided_us },
                    )
                })
                .filter(|&(_, t)| valid_log(t))
                .collect();
            let label = format!("{name} ({side})");
            lines.push(Series {
                label,
                colour,
                dashed,
                points,
            });
        }
    }
    let labels = ("message size (bytes)", "time per operation (µs)");
    line_chart(title, labels, &x, &y, &lines)
}

fn speedup_plot(title: &str, series: &[(&str, Vec<&Row>)]) -> String {
    let rows = || series.iter().flat_map(|(_, members)| members.iter());
    let x = size_axis(rows().map(|r| r.bytes));
    let max = rows()
        .map(|r| r.speedup)
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max);
    let y = linear_axis(max);
    let lines: Vec<Series> = series
        .iter()
        .enumerate()
        .map(|(i, (name, members))| Series {
            label: (*name).to_string(),
            colour: PALETTE[i % PALETTE.len()],
            dashed: false,
            points: members
                .iter()
                .map(|r| (r.bytes as f64, r.speedup))
                .filter(|&(_, s)| s.is_finite() && s >= 0.0)
                .collect(),
        })
        .collect();
    let ylabel = format!("speedup ({PEER} time / onesided time)");
    line_chart(title, ("message size (bytes)", &ylabel), &x, &y, &lines)
}

/// Horizontal bars, one per case, with the speedup written at each bar's end.
fn bar_chart(title: &str, rows: &[&Row]) -> String {
    const BAR: f64 = 26.0;
    let cases: Vec<String> = rows.iter().map(|r| r.case()).collect();
    let longest = cases.iter().map(|c| c.chars().count()).max().unwrap_or(0);
    let f = Frame {
        left: (longest as f64 * CHAR_W + 20.0).max(LEFT),
        top: TOP,
        w: PLOT_W,
        h: (rows.len() as f64 * BAR).max(60.0),
    };
    let max = rows
        .iter()
        .map(|r| r.speedup)
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max);
    let x = linear_axis(max);
    let y = Axis {
        lo: 0.0,
        hi: 1.0,
        log: false,
        ticks: Vec::new(),
    };
    let width = f.left + f.w + 60.0;
    let mut out = svg_open(width, f.top + f.h + BOTTOM, title);
    let xlabel = format!("speedup ({PEER} time / onesided time)");
    draw_axes(&mut out, &f, &x, &y, &xlabel, "");
    out.push_str("<g>\n");
    for (i, (row, case)) in rows.iter().zip(&cases).enumerate() {
        let cy = f.top + (i as f64 + 0.5) * BAR;
        text(&mut out, f.left - 8.0, cy + 4.0, "end", "", case);
        let s = row.speedup;
        if s.is_finite() && s >= 0.0 {
            let end = f.px(&x, s);
            let _ = writeln!(
                out,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="18" fill="{}"/>"#,
                f.left,
                cy - 9.0,
                end - f.left,
                PALETTE[0]
            );
            text(&mut out, end + 4.0, cy + 4.0, "start", "", &fmt_speedup(s));
        } else {
            text(&mut out, f.left + 4.0, cy + 4.0, "start", "", "n/a");
        }
    }
    out.push_str("</g>\n");
    let px = f.px(&x, 1.0);
    line(
        &mut out,
        (px, f.top),
        (px, f.top + f.h),
        r#" stroke="black" stroke-dasharray="2 3""#,
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::row;
    fn well_formed(svg: &str) -> bool {
        let opens = svg.matches("<g>").count() + svg.matches("<g ").count();
        (svg.starts_with("<svg") || svg.starts_with("<?xml"))
            && svg.trim_end().ends_with("</svg>")
            && svg.contains(r#"xmlns="http://www.w3.org/2000/svg""#)
            && opens == svg.matches("</g>").count()
            && svg.matches('<').count() == svg.matches('>').count()
    }

    #[test]
    fn svg_files() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir =
            std::env::temp_dir().join(format!("onesided-report-{}-{nanos}", std::process::id()));
        let mut rows = Vec::new();
        for (i, bytes) in [8u64, 4096, 1 << 20].into_iter().enumerate() {
            let t = 1.0 + i as f64 * 10.0;
            rows.push(row("get", "lock_all_flush", bytes, t, t * 1.5));
            rows.push(row("get", "fence<&>", bytes, t * 2.0, t));
        }
        rows.push(row("get", "broken", 64, f64::NAN, -1.0));
        rows.push(row("window", "create_free", 0, 10.0, 12.0));
        rows.push(row("window", "allocate_free", 0, 0.0, 12.0));
        let written = svg_plots(&rows, &dir, "4-shm").expect("svg_plots");
        let names: Vec<String> = written
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "4-shm-get-time.svg",
                "4-shm-get-speedup.svg",
                "4-shm-window-speedup.svg"
            ]
        );
        for path in &written {
            let svg = std::fs::read_to_string(path).expect("read svg");
            assert!(well_formed(&svg), "{}:\n{svg}", path.display());
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
        let time = std::fs::read_to_string(&written[0]).expect("read");
        assert!(time.contains("get: time per operation (4 ranks, shm)"));
        assert!(time.contains("fence&lt;&amp;&gt; (MPICH)"));
        assert!(time.contains(">1MiB<") && time.contains(">1KiB<") && time.contains(">10<"));
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }
}
