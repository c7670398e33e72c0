//! A run's rows as SVG plots, drawn with plotters (its SVG backend alone:
//! text goes into the SVG as text, so no font crate or system font
//! library is needed): time and speedup against message size per suite, a
//! bar chart for suites without sizes.

use std::ops::Range;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::table::fmt_speedup;
use super::{size_label, Bars, Row};

/// The side the benchmarks compare against, as named in plots.
const PEER: &str = "MPICH";
const PALETTE: [RGBColor; 12] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0xad, 0x49, 0x4a),
];
/// A plot's size in pixels.
const SIZE: (u32, u32) = (880, 460);
/// Approximate width of one character of 12px sans-serif text.
const CHAR_W: u32 = 7;

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
            let svg = svg.map_err(|e| std::io::Error::other(format!("drawing {name}: {e}")))?;
            let path = dir.join(name);
            std::fs::write(&path, svg)?;
            written.push(path);
        }
    }
    Ok(written)
}

/// What drawing a plot may fail with.
type Drawn = Result<String, Box<dyn std::error::Error>>;

fn valid_log(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// A log axis's range around `values` (a decade when there is none).
fn log_range(values: impl Iterator<Item = f64>) -> Range<f64> {
    let (lo, hi) = values
        .filter(|v| valid_log(*v))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        1.0..10.0
    } else {
        lo / 1.5..hi * 1.5
    }
}

/// The x range of `series`' sizes.
fn size_range(series: &[(&str, Vec<&Row>)]) -> Range<f64> {
    log_range(
        series
            .iter()
            .flat_map(|(_, members)| members.iter().map(|r| r.bytes as f64)),
    )
}

/// Points of `members` with `value`, those a log axis can draw.
fn points(members: &[&Row], value: impl Fn(&Row) -> f64) -> Vec<(f64, f64)> {
    members
        .iter()
        .map(|r| (r.bytes as f64, value(r)))
        .filter(|&(x, y)| valid_log(x) && y.is_finite() && y >= 0.0)
        .collect()
}

/// The legend of a line chart's series, upper left.
fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
}

fn time_plot(title: &str, series: &[(&str, Vec<&Row>)]) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let times = series
            .iter()
            .flat_map(|(_, m)| m.iter().flat_map(|r| [r.onesided_us, r.peer_us]));
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(
                size_range(series).log_scale().base(2.0),
                log_range(times).log_scale(),
            )?;
        chart
            .configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc("time per operation (µs)")
            .x_label_formatter(&|v| size_label(v.round() as u64))
            .y_label_formatter(&|v| format!("{v}"))
            .draw()?;
        for (i, (name, members)) in series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let ours: Vec<(f64, f64)> = points(members, |r| r.onesided_us)
                .into_iter()
                .filter(|p| valid_log(p.1))
                .collect();
            let theirs: Vec<(f64, f64)> = points(members, |r| r.peer_us)
                .into_iter()
                .filter(|p| valid_log(p.1))
                .collect();
            chart
                .draw_series(LineSeries::new(ours.clone(), colour.stroke_width(2)))?
                .label(format!("{name} (onesided)"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
            chart
                .draw_series(DashedLineSeries::new(
                    theirs.clone(),
                    6,
                    4,
                    colour.stroke_width(2),
                ))?
                .label(format!("{name} ({PEER})"))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 8, y)], colour.stroke_width(2))
                });
            chart.draw_series(
                theirs
                    .iter()
                    .map(|&p| Circle::new(p, 3, colour.stroke_width(1))),
            )?;
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

fn speedup_plot(title: &str, series: &[(&str, Vec<&Row>)]) -> Drawn {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let max = (series.iter().flat_map(|(_, m)| m.iter().map(|r| r.speedup)))
            .filter(|s| s.is_finite())
            .fold(1.0f64, f64::max);
        let x = size_range(series);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(x.clone().log_scale().base(2.0), 0.0..max * 1.15)?;
        chart
            .configure_mesh()
            .x_desc("message size (bytes)")
            .y_desc(format!("speedup ({PEER} time / onesided time)"))
            .x_label_formatter(&|v| size_label(v.round() as u64))
            .draw()?;
        // Parity.
        chart.draw_series(DashedLineSeries::new(
            [(x.start, 1.0), (x.end, 1.0)],
            3,
            4,
            BLACK.stroke_width(1),
        ))?;
        for (i, (name, members)) in series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let ours = points(members, |r| r.speedup);
            chart
                .draw_series(LineSeries::new(ours.clone(), colour.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
        }
        legend(&mut chart)?;
        root.present()?;
    }
    Ok(svg)
}

/// Horizontal bars, one per case, with the speedup written at each bar's
/// end ("n/a" where there is none).
fn bar_chart(title: &str, rows: &[&Row]) -> Drawn {
    let cases: Vec<String> = rows.iter().map(|r| r.case()).collect();
    let longest = cases.iter().map(|c| c.chars().count()).max().unwrap_or(0) as u32;
    let n = rows.len();
    let height = (80 + 30 * n as u32).max(200);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let max = (rows.iter().map(|r| r.speedup))
            .filter(|s| s.is_finite())
            .fold(1.0f64, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(longest * CHAR_W + 16)
            .build_cartesian_2d(0.0..max * 1.2, (0..n).into_segmented())?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => cases.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc(format!("speedup ({PEER} time / onesided time)"))
            .draw()?;
        let speedups = || {
            (rows.iter().enumerate()).filter_map(|(i, r)| {
                (r.speedup.is_finite() && r.speedup >= 0.0).then_some((i, r.speedup))
            })
        };
        chart.draw_series(speedups().map(|(i, s)| {
            Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (s, SegmentValue::Exact(i + 1)),
                ],
                PALETTE[0].filled(),
            )
        }))?;
        chart.draw_series(speedups().map(|(i, s)| {
            Text::new(
                format!(" {}", fmt_speedup(s)),
                (s, SegmentValue::CenterOf(i)),
                ("sans-serif", 12),
            )
        }))?;
        chart.draw_series(
            (rows.iter().enumerate())
                .filter(|(_, r)| !(r.speedup.is_finite() && r.speedup >= 0.0))
                .map(|(i, _)| {
                    Text::new(" n/a", (0.0, SegmentValue::CenterOf(i)), ("sans-serif", 12))
                }),
        )?;
        // Parity.
        chart.draw_series(DashedLineSeries::new(
            [(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
            3,
            4,
            BLACK.stroke_width(1),
        ))?;
        root.present()?;
    }
    Ok(svg)
}

/// Writes each chart of `charts` as `{prefix}-{name}.svg` under `dir`
/// (created if missing): its groups along x (one at each integer), a bar
/// per series within each, the series' colours in a legend at the right.
/// Returns the paths written.
///
/// # Errors
///
/// The I/O error of creating the directory or writing a file, or
/// plotters' drawing error as an I/O error naming the chart.
pub fn bar_plots(charts: &[Bars], dir: &Path, prefix: &str) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for chart in charts {
        let name = file_part(&format!("{prefix}-{}.svg", chart.name));
        let svg = grouped_bars(chart)
            .map_err(|e| std::io::Error::other(format!("drawing {name}: {e}")))?;
        let path = dir.join(name);
        std::fs::write(&path, svg)?;
        written.push(path);
    }
    Ok(written)
}

/// One chart of [`bar_plots`].
fn grouped_bars(bars: &Bars) -> Drawn {
    let n = bars.groups.len();
    let values = || {
        bars.series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
    };
    let drawable = |v: f64| v.is_finite() && if bars.log { v > 0.0 } else { v >= 0.0 };
    let top = values().filter(|v| drawable(*v)).fold(0.0f64, f64::max);
    let (low, high) = match bars.log {
        true => {
            let r = log_range(values());
            (r.start, r.end)
        }
        false => (0.0, (top * 1.15).max(1.0)),
    };
    let longest = bars
        .series
        .iter()
        .map(|(s, _)| s.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_w = longest * CHAR_W + 40;
    let width =
        (120 + 70 * n as u32 * (bars.series.len() as u32).max(2) / 3).max(SIZE.0) + legend_w;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, SIZE.1 + 60)).into_drawing_area();
        root.fill(&WHITE)?;
        let (plot, side) = root.split_horizontally(width - legend_w);
        let mut builder = ChartBuilder::on(&plot);
        builder
            .caption(&bars.title, ("sans-serif", 15))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70);
        let x = -0.5..n as f64 - 0.5;
        let groups = &bars.groups;
        let label = |v: &f64| {
            let i = v.round();
            match (v - i).abs() < 1e-6 && i >= 0.0 {
                true => groups.get(i as usize).cloned().unwrap_or_default(),
                false => String::new(),
            }
        };
        let k = bars.series.len().max(1) as f64;
        let slot = 0.8 / k;
        let at = |g: usize, i: usize| g as f64 - 0.4 + slot * i as f64;
        // A log axis is drawn as a linear one over log10 of the values,
        // labelled with the values themselves.
        let scale = |v: f64| if bars.log { v.log10() } else { v };
        let mut chart = builder.build_cartesian_2d(x, scale(low)..scale(high))?;
        let y_label = |v: &f64| match bars.log {
            true => {
                // Three significant digits.
                let value = 10f64.powf(*v);
                let decimals = (2 - v.floor() as i32).max(0) as usize;
                format!("{value:.decimals$}")
            }
            false => format!("{v}"),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&label)
            .y_desc(bars.y_desc.as_str())
            .y_label_formatter(&y_label)
            .draw()?;
        for (i, (_, values)) in bars.series.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            chart.draw_series((values.iter().enumerate()).filter_map(|(g, v)| {
                let v = (*v).filter(|v| drawable(*v))?;
                let corners = [(at(g, i), scale(low)), (at(g, i) + slot, scale(v))];
                Some(Rectangle::new(corners, colour.filled()))
            }))?;
        }
        for (i, (name, _)) in bars.series.iter().enumerate() {
            let y = 50 + 20 * i as i32;
            let colour = PALETTE[i % PALETTE.len()];
            side.draw(&Rectangle::new([(4, y), (18, y + 12)], colour.filled()))?;
            side.draw(&Text::new(name.as_str(), (24, y), ("sans-serif", 12)))?;
        }
        root.present()?;
    }
    Ok(svg)
}

/// A bar chart of counts (`label`, count), one bar per label, out of
/// `total` (the axis's end): the reduce suite's kill trials by outcome.
///
/// # Errors
///
/// plotters' drawing error, as an I/O error naming the chart.
pub fn count_plot(title: &str, bars: &[(&str, u32)], total: u32) -> std::io::Result<String> {
    let drawn = (|| -> Drawn {
        let n = bars.len();
        let longest = bars
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0) as u32;
        let mut svg = String::new();
        {
            let height = (80 + 40 * n as u32).max(200);
            let root = SVGBackend::with_string(&mut svg, (SIZE.0, height)).into_drawing_area();
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(longest * CHAR_W + 16)
                .build_cartesian_2d(0.0..f64::from(total.max(1)) * 1.1, (0..n).into_segmented())?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(n)
                .y_label_formatter(&|v| match v {
                    SegmentValue::CenterOf(i) => {
                        bars.get(*i).map(|b| b.0.to_string()).unwrap_or_default()
                    }
                    _ => String::new(),
                })
                .x_desc(format!("trials (of {total})"))
                .draw()?;
            chart.draw_series(bars.iter().enumerate().map(|(i, (_, c))| {
                Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(i)),
                        (f64::from(*c), SegmentValue::Exact(i + 1)),
                    ],
                    PALETTE[i % PALETTE.len()].filled(),
                )
            }))?;
            chart.draw_series(bars.iter().enumerate().map(|(i, (_, c))| {
                Text::new(
                    format!(" {c}"),
                    (f64::from(*c), SegmentValue::CenterOf(i)),
                    ("sans-serif", 12),
                )
            }))?;
            root.present()?;
        }
        Ok(svg)
    })();
    drawn.map_err(|e| std::io::Error::other(format!("drawing {title}: {e}")))
}

/// One line of a [`log_log_plot`]: its name, onesided's points and the
/// peer's (drawn dashed in the same colour), if any.
pub type LogLine = (String, Vec<(f64, f64)>, Vec<(f64, f64)>);

/// A log-log line chart against the process count (x, base 2), one
/// colour per line; points a log axis cannot draw are left out.
///
/// # Errors
/// What drawing fails with.
pub fn log_log_plot(title: &str, y_desc: &str, lines: &[LogLine]) -> std::io::Result<String> {
    let drawn = || -> Drawn {
        let keep = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
            pts.iter()
                .copied()
                .filter(|&(x, y)| valid_log(x) && valid_log(y))
                .collect()
        };
        let all: Vec<(f64, f64)> = (lines.iter())
            .flat_map(|(_, a, b)| keep(a).into_iter().chain(keep(b)))
            .collect();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(70)
                .build_cartesian_2d(
                    log_range(all.iter().map(|p| p.0)).log_scale().base(2.0),
                    log_range(all.iter().map(|p| p.1)).log_scale(),
                )?;
            chart
                .configure_mesh()
                .x_desc("processes")
                .y_desc(y_desc)
                .x_label_formatter(&|v| format!("{}", v.round()))
                .y_label_formatter(&|v| format!("{v}"))
                .draw()?;
            for (i, (name, ours, theirs)) in lines.iter().enumerate() {
                let colour = PALETTE[i % PALETTE.len()];
                let (ours, theirs) = (keep(ours), keep(theirs));
                chart
                    .draw_series(LineSeries::new(ours.clone(), colour.stroke_width(2)))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                    });
                chart.draw_series(ours.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
                if !theirs.is_empty() {
                    chart.draw_series(DashedLineSeries::new(
                        theirs.clone(),
                        6,
                        4,
                        colour.stroke_width(2),
                    ))?;
                    chart.draw_series(
                        theirs
                            .iter()
                            .map(|&p| Circle::new(p, 3, colour.stroke_width(1))),
                    )?;
                }
            }
            legend(&mut chart)?;
            root.present()?;
        }
        Ok(svg)
    };
    drawn().map_err(|e| std::io::Error::other(format!("drawing {title}: {e}")))
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
        // Sizes labelled in binary units, times in plain numbers.
        assert!(
            time.contains("\n8B\n") && time.contains("\n512KiB\n"),
            "{time}"
        );
        assert!(time.contains("\n10\n") && time.contains("message size (bytes)"));
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
    }

    #[test]
    fn counts_draw() {
        let svg = count_plot("kills", &[("right", 98), ("failed", 2), ("hung", 0)], 100).unwrap();
        assert!(well_formed(&svg));
        assert!(svg.contains("right") && svg.contains(" 98"));
    }

    #[test]
    fn grouped_bars_draw() {
        for log in [true, false] {
            let bars = Bars {
                name: "fig".into(),
                title: "omega".into(),
                y_desc: "omega".into(),
                log,
                groups: vec!["1->2".into(), "2->3*".into()],
                series: vec![
                    ("col thread".into(), vec![Some(1.5), None]),
                    ("rma_lock thread".into(), vec![Some(0.0), Some(f64::NAN)]),
                ],
            };
            let svg = grouped_bars(&bars).unwrap();
            assert!(well_formed(&svg), "{svg}");
            assert!(svg.contains("2-&gt;3*") && svg.contains("rma_lock thread"));
        }
    }
}
