//! `onesided-model [--network FILE | --profile FILE] [--max-p N] [--at P,...] [--json FILE] [--plots DIR] [--check PROFILE]`
//!
//! Predicts, per process, the messages and time of every operation of
//! `onesided-bench scale` and of every collective at 8 B, 64 KiB and
//! 1 MiB per rank, for p = 2, 4, ... up to `--max-p` (16384), beside
//! MPICH's documented choices on the same network (`onesided_bench::model`).
//! The network: a file (`benches/models/hdr-infiniband.toml`), the
//! parameters fitted to a profile of `onesided-tune --nolocal`
//! (measured here), or the built-in ones. Prints the tables at the
//! process counts of `--at` (1024 and 16384), writes every point as a JSON
//! line and log-log plots against p. `--check PROFILE` sets the model
//! against a profile's measurements at its geometry.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use onesided_bench::model::{self, Network, Point, SCALE_OPS, SIZES};
use onesided_bench::report::{log_log_plot, size_label, LogLine};
use onesided_collectives::{cost, Collective, Profile};

/// onesided-model: the time and messages of onesided's operations and
/// collectives at p = 2 to 16384, beside MPICH's choices.
#[derive(Parser)]
#[command(name = "onesided-model")]
struct Args {
    /// A network file (latency_us, bandwidth_gb_s, reduce_gb_s,
    /// overhead_us, name, source).
    #[arg(long, conflicts_with = "profile")]
    network: Option<PathBuf>,
    /// A profile of onesided-tune across hosts: the parameters fitted to it.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// The largest process count.
    #[arg(long, default_value_t = 16384)]
    max_p: u32,
    /// Process counts of the printed tables.
    #[arg(long, value_delimiter = ',', default_values_t = [1024, 16384])]
    at: Vec<u32>,
    /// Where JSON lines go.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Where the plots go.
    #[arg(long)]
    plots: Option<PathBuf>,
    /// A profile to check the model against: at each of its points, the
    /// model's choice beside the fastest measured, and its predicted time
    /// beside the measured one.
    #[arg(long)]
    check: Option<PathBuf>,
}

fn network(args: &Args) -> Result<Network, String> {
    if let Some(file) = &args.network {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        return Network::parse(&text).map_err(|e| format!("{}: {e}", file.display()));
    }
    if let Some(file) = &args.profile {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| format!("{name}: {e}"))?;
        let profile = Profile::parse(&text, &name).map_err(|e| e.to_string())?;
        let across = profile
            .entries()
            .iter()
            .filter(|e| e.geometry.ranks_per_host < e.geometry.ranks);
        let params = cost::fit(across)
            .ok_or_else(|| format!("{name}: no entries across hosts the model fits"))?;
        return Ok(Network {
            name: format!("fitted to {name}"),
            source: "onesided-tune --nolocal on this machine".into(),
            params,
        });
    }
    Ok(Network::builtin())
}

fn json_line(kind: &str, fields: &[(&str, serde_json::Value)]) -> String {
    let mut map = serde_json::Map::new();
    map.insert("kind".into(), kind.into());
    for (k, v) in fields {
        map.insert((*k).into(), v.clone());
    }
    serde_json::Value::Object(map).to_string()
}

fn run(args: &Args) -> Result<(), String> {
    let net = network(args)?;
    let params = net.params;
    println!("# onesided-model: {}", net.name);
    println!("# source: {}", net.source);
    println!(
        "# alpha {:.3} us, beta {:.3e} us/B, gamma {:.3e} us/B, o {:.3} us",
        params.alpha, params.beta, params.gamma, params.o
    );
    let ps = model::counts(args.max_p);
    let mut json = Vec::new();
    for &p in &ps {
        for op in SCALE_OPS {
            let messages = model::scale_messages(op, p).map(|c| c.value());
            let (us, mpich) = model::scale_time(op, p, &params).unwrap_or((f64::NAN, None));
            json.push(json_line(
                "scale",
                &[
                    ("op", op.into()),
                    ("p", p.into()),
                    ("messages", messages.into()),
                    ("onesided_us", us.into()),
                    ("mpich_us", mpich.into()),
                ],
            ));
        }
        for c in Collective::ALL {
            for bytes in SIZES {
                let pt = model::point(c, p, bytes, &params);
                json.push(json_line(
                    "collective",
                    &[
                        ("collective", c.name().into()),
                        ("p", p.into()),
                        ("bytes", bytes.into()),
                        ("onesided", pt.ours.0.name().into()),
                        ("onesided_us", pt.ours.1.into()),
                        ("messages", pt.ours.2.into()),
                        ("mpich", pt.mpich.0.name().into()),
                        ("mpich_us", pt.mpich.1.into()),
                    ],
                ));
            }
        }
    }
    for &p in args.at.iter().filter(|p| ps.contains(p)) {
        println!("\n## p = {p}: the scale suite's operations\n");
        println!("| operation | messages | onesided us | MPICH us | speedup |");
        println!("|---|---|---|---|---|");
        for op in SCALE_OPS {
            let m = model::scale_messages(op, p).map_or("-".into(), |c| match c {
                model::Count::Exact(v) => v.to_string(),
                model::Count::AtMost(v) => format!("<= {v}"),
            });
            let (us, mpich) =
                model::scale_time(op, p, &params).map_or((None, None), |(a, b)| (Some(a), b));
            let cell = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
            let ratio = match (us, mpich) {
                (Some(a), Some(b)) if a > 0.0 => format!("{:.1}x", b / a),
                _ => "-".into(),
            };
            println!("| {op} | {m} | {} | {} | {ratio} |", cell(us), cell(mpich));
        }
        println!("\n## p = {p}: collectives\n");
        println!("| collective | size | onesided | us | messages | MPICH | us | speedup |");
        println!("|---|---|---|---|---|---|---|---|");
        for c in Collective::ALL {
            for bytes in SIZES {
                let Point { ours, mpich, .. } = model::point(c, p, bytes, &params);
                println!(
                    "| {} | {} | {} | {:.2} | {} | {} | {:.2} | {:.2}x |",
                    c.name(),
                    size_label(bytes),
                    ours.0.name(),
                    ours.1,
                    ours.2,
                    mpich.0.name(),
                    mpich.1,
                    mpich.1 / ours.1,
                );
            }
        }
    }
    if let Some(file) = &args.check {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| format!("{name}: {e}"))?;
        let profile = Profile::parse(&text, &name).map_err(|e| e.to_string())?;
        let rows = model::check(&profile, &params);
        println!("\n## The model against {name}\n");
        println!("| collective | size | fastest measured | us | model's choice | measured us | of fastest | predicted us | predicted / measured |");
        println!("|---|---|---|---|---|---|---|---|---|");
        let (mut near, mut within2) = (0, 0);
        for r in &rows {
            let (of_best, ratio) = (r.chosen.1 / r.best.1, r.chosen.2 / r.chosen.1);
            near += usize::from(of_best <= 1.1);
            within2 += usize::from((0.5..=2.0).contains(&ratio));
            println!(
                "| {} | {} | {} | {:.1} | {} | {:.1} | {:.2}x | {:.1} | {:.2} |",
                r.collective.name(),
                size_label(r.bytes),
                r.best.0,
                r.best.1,
                r.chosen.0.name(),
                r.chosen.1,
                of_best,
                r.chosen.2,
                ratio
            );
        }
        println!(
            "\nthe model's choice within 1.1x of the fastest at {near} of {} points; its time within 2x of the measured at {within2}",
            rows.len()
        );
    }
    if let Some(file) = &args.json {
        std::fs::write(file, json.join("\n") + "\n")
            .map_err(|e| format!("{}: {e}", file.display()))?;
        println!("\njson: {}", file.display());
    }
    if let Some(dir) = &args.plots {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut files = Vec::new();
        let xy = |f: &dyn Fn(u32) -> Option<f64>| -> Vec<(f64, f64)> {
            ps.iter()
                .filter_map(|&p| Some((f64::from(p), f(p)?)))
                .collect()
        };
        let lines: Vec<LogLine> = SCALE_OPS
            .iter()
            .filter(|op| model::scale_time(op, 2, &params).is_some())
            .map(|op| {
                let ours = xy(&|p| model::scale_time(op, p, &params).map(|t| t.0));
                let theirs = xy(&|p| model::scale_time(op, p, &params).and_then(|t| t.1));
                (op.to_string(), ours, theirs)
            })
            .collect();
        files.push((
            "model-scale.svg".to_string(),
            log_log_plot("model: scale operations (MPICH dashed)", "us", &lines),
        ));
        for bytes in SIZES {
            let lines: Vec<LogLine> = Collective::ALL
                .iter()
                .map(|&c| {
                    let ours = xy(&|p| Some(model::point(c, p, bytes, &params).ours.1));
                    let theirs = xy(&|p| Some(model::point(c, p, bytes, &params).mpich.1));
                    (c.name().to_string(), ours, theirs)
                })
                .collect();
            let title = format!("model: collectives of {} (MPICH dashed)", size_label(bytes));
            files.push((
                format!("model-collectives-{bytes}.svg"),
                log_log_plot(&title, "us", &lines),
            ));
        }
        for (name, svg) in files {
            let svg = svg.map_err(|e| e.to_string())?;
            let path = dir.join(name);
            std::fs::write(&path, svg).map_err(|e| format!("{}: {e}", path.display()))?;
            println!("plot: {}", path.display());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onesided-model: {e}");
            ExitCode::FAILURE
        }
    }
}
