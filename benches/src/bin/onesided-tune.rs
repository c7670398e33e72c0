//! `onesided-tune --np N [--provider shm|tcp] --out FILE [--scale S] [--max-bytes B] [--check] [--nolocal]`
//!
//! Profiles every algorithm of every collective on N ranks of this host
//! (launching itself under `osrun`, which must sit beside it; with
//! `--nolocal` every rank its own host, `ONESIDED_HOST=node{rank}`: the
//! geometry of a cluster with a rank per host, through the provider): message
//! sizes 8 B to 32 MiB per rank (alltoall to 2 MiB per pair), elements
//! `f64` (and `i32` for the reductions), repetitions scaled by size over
//! buffers made once per point, each timed after a barrier until the
//! slowest rank is done; the median of each point goes to FILE
//! in the profile format of `onesided_collectives::profile` (version 1),
//! for `ONESIDED_PROFILE`. Every result is checked as it is measured (a
//! wrong one fails the run). `shared` is measured only when every rank is
//! on one host (it runs nowhere else).
//!
//! `--check` then runs a second job with FILE loaded: at every point
//! (`f64`) it measures the tuned choice and every algorithm forced, and
//! prints for each point the choice, its time, the best algorithm of this
//! job and its time, and their ratio, then how many points are within 5%
//! of the best (a point where the choice is the best algorithm counts as
//! within). Both jobs first run barriers for a quarter of a second, then
//! pass three times over the grid, measuring every variant of a point
//! once per pass, one after the other (starting from another each pass),
//! and four times more over the points whose two fastest algorithms came
//! within 30% of each other: a point's time is the median of three (or
//! seven) measurements spread over the job.

#![forbid(unsafe_code)]

use std::process::{Command, ExitCode, Stdio};

use clap::Parser;
use std::time::Instant;

use onesided_collectives::profile::{Entry, Profile};
use onesided_collectives::{Algorithm, Collective, Comm, Op};
use onesided_rma::Group;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const SIZES: [usize; 8] = [8, 64, 512, 4096, 32768, 262_144, 2 << 20, 32 << 20];

/// onesided-tune: measures every algorithm of every collective on N ranks
/// of this host into a performance profile (ONESIDED_PROFILE), and with
/// --check how close the tuned choices come to the best.
#[derive(Debug, Parser)]
#[command(name = "onesided-tune", version)]
struct Cli {
    /// Ranks.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    np: u32,
    /// Provider.
    #[arg(long, default_value = "shm", value_parser = ["shm", "tcp"])]
    provider: String,
    /// The profile to write.
    #[arg(long, value_name = "FILE")]
    out: std::path::PathBuf,
    /// Multiplies every repetition count.
    #[arg(long, default_value_t = 1.0, value_parser = positive)]
    scale: f64,
    /// Largest message per rank, in bytes.
    #[arg(long, default_value_t = 32 << 20, value_name = "B")]
    max_bytes: usize,
    /// Then measure the tuned choices against every algorithm.
    #[arg(long)]
    check: bool,
    /// Every rank its own host (ONESIDED_HOST=node{rank}): a cluster's
    /// geometry of a rank per host, through the provider.
    #[arg(long)]
    nolocal: bool,
}

/// A number above 0.
fn positive(text: &str) -> std::result::Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|v| *v > 0.0 && v.is_finite())
        .ok_or_else(|| "a number above 0".to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Rank mode (`--rank SCALE MAX_BYTES [check]`), started by osrun.
    let result = if args.first().map(String::as_str) == Some("--rank") {
        rank(
            args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1.0),
            args.get(2).and_then(|s| s.parse().ok()).unwrap_or(32 << 20),
            args.get(3).map(String::as_str) == Some("check"),
        )
    } else {
        drive(&Cli::parse())
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onesided-tune: {e}");
            ExitCode::FAILURE
        }
    }
}

fn drive(cli: &Cli) -> Result<()> {
    let Cli {
        np,
        ref provider,
        ref out,
        scale,
        max_bytes,
        check,
        nolocal,
    } = *cli;
    let ranks = |mode: &str, profile: Option<&std::path::Path>| -> Result<String> {
        let exe = std::env::current_exe()?;
        let osrun = exe.with_file_name("osrun");
        let mut cmd = Command::new(&osrun);
        cmd.args([
            "-n",
            &np.to_string(),
            "--provider",
            provider,
            "--timeout",
            "3600",
        ])
        .arg(&exe)
        .args(["--rank", &scale.to_string(), &max_bytes.to_string(), mode])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
        match profile {
            Some(p) => cmd.env(onesided_collectives::select::PROFILE_ENV, p),
            None => cmd.env_remove(onesided_collectives::select::PROFILE_ENV),
        };
        if nolocal {
            cmd.env(onesided_fabric::world::HOST_ENV, "node{rank}");
        }
        let output = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", osrun.display()))?;
        if !output.status.success() {
            return Err(format!("the ranks failed ({})", output.status).into());
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    };
    let text = ranks("tune", None)?;
    let body: String = std::iter::once(onesided_collectives::profile::HEADER.to_string())
        .chain(
            text.lines()
                .filter_map(|l| l.strip_prefix("PROFILE ").map(str::to_string)),
        )
        .collect::<Vec<_>>()
        .join("\n");
    let profile = Profile::parse(&body, "(measured)")?;
    std::fs::write(out, profile.to_text())?;
    println!(
        "onesided-tune: {} entries written to {}",
        profile.entries().len(),
        out.display()
    );
    if check {
        report_check(&ranks("check", Some(out))?);
    }
    Ok(())
}

/// Prints the `CHECK` lines of the check job as a table, and how many
/// points the tuned choice is within 5% of the best algorithm.
fn report_check(text: &str) {
    println!(
        "{:<15} {:>9}  {:<20} {:>11}  {:<20} {:>11}  {:>6}",
        "collective", "bytes", "tuned_choice", "tuned_us", "best", "best_us", "ratio"
    );
    let (mut points, mut within) = (0, 0);
    for line in text.lines().filter_map(|l| l.strip_prefix("CHECK ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [c, bytes, chosen, tuned, best, best_us] = f[..] else {
            continue;
        };
        let (Ok(t), Ok(b)) = (tuned.parse::<f64>(), best_us.parse::<f64>()) else {
            continue;
        };
        let ratio = t / b.max(1e-9);
        points += 1;
        // The best algorithm itself is within by definition (its two
        // measurements differ by the machine's noise only).
        within += usize::from(ratio <= 1.05 || chosen == best);
        println!("{c:<15} {bytes:>9}  {chosen:<20} {t:>11.2}  {best:<20} {b:>11.2}  {ratio:>6.3}");
    }
    println!(
        "onesided-tune: the tuned choice is within 5% of the best at {within} of {points} points"
    );
}

/// Rank mode: measures everything (rank 0 prints `PROFILE` lines), or
/// checks the loaded profile's choices (`CHECK` lines).
fn rank(scale: f64, max_bytes: usize, check: bool) -> Result<()> {
    let world = onesided_fabric::World::init()?;
    let rma = onesided_rma::Rma::new(world.endpoint())?;
    let comm = Comm::new(&rma, Group::world(world.size()))?;
    if check {
        check_choices(&comm, scale, max_bytes)?;
        drop(comm);
        drop(rma);
        return Ok(world.finalize()?);
    }
    warm_up(&comm)?;
    let geometry = comm.geometry();
    let grid = points(max_bytes, true);
    let forced = |c| runnable(&comm, c).into_iter().map(Some).collect();
    let mut entries = Vec::new();
    for (point, times) in grid.iter().zip(medians(&comm, &grid, forced, scale)?) {
        for (algorithm, us) in runnable(&comm, point.collective).into_iter().zip(times) {
            entries.push(Entry {
                collective: point.collective,
                algorithm: algorithm.name().to_string(),
                geometry,
                element: point.element.to_string(),
                bytes: point.bytes as u64,
                us,
            });
        }
    }
    if comm.rank() == 0 {
        let text = Profile::new(entries).to_text();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("onesided-profile"))
        {
            println!("PROFILE {line}");
        }
    }
    drop(comm);
    drop(rma);
    Ok(world.finalize()?)
}

/// The algorithms of `collective` that run on this job's geometry
/// (`shared` needs every rank on one host).
fn runnable(comm: &Comm, collective: Collective) -> Vec<Algorithm> {
    let g = comm.geometry();
    Algorithm::all(collective)
        .iter()
        .copied()
        .filter(|a| !a.is_shared() || g.ranks_per_host == g.ranks)
        .collect()
}

/// Repetitions of a point of `bytes`.
fn reps(bytes: usize, scale: f64) -> usize {
    let reps = ((16usize << 20) / bytes.max(1)).clamp(3, 100);
    ((reps as f64 * scale) as usize).max(3)
}

/// Passes over the grid: each point's variants are measured once per
/// pass, so that a slow spell of the machine (seconds, such as the
/// moments after the job starts, while the kernel has yet to spread the
/// ranks over the cores) falls on one of a point's measurements, not on
/// all of them, nor on one variant only.
const PASSES: usize = 3;

/// Passes more over the points whose two fastest algorithms came within
/// [`CLOSE`] of each other in the first [`PASSES`]: there the choice turns
/// on a difference the machine's noise can reverse. 4 ranks on 2 cores,
/// 3 passes each: gather 2 MiB, linear 2077 against shared 2442 us in
/// the profile, 2315 against 1870 us in the check; alltoall 256 KiB,
/// one-sided 233 against shared 264 us, then 620 against 266 us (62 and
/// 63 of 64 points within 5% in two runs).
const MORE_PASSES: usize = 4;

/// How close (the slower over the faster) two algorithms' times may be for
/// their point to get [`MORE_PASSES`].
const CLOSE: f64 = 1.3;

/// One point of the grid.
struct Point {
    collective: Collective,
    element: &'static str,
    bytes: usize,
}

/// The grid up to `max_bytes` per rank: every collective, size and, with
/// `every_element`, element type (else the first).
fn points(max_bytes: usize, every_element: bool) -> Vec<Point> {
    let mut grid = Vec::new();
    for collective in Collective::ALL {
        let kinds = elements(collective);
        let kinds = if every_element { kinds } else { &kinds[..1] };
        for &element in kinds {
            for bytes in sizes(collective).into_iter().filter(|&b| b <= max_bytes) {
                grid.push(Point {
                    collective,
                    element,
                    bytes,
                });
            }
        }
    }
    grid
}

/// For each point of `grid`, the median time of each of its `variants`
/// (an algorithm forced, or `None`: the choice) over [`PASSES`] passes,
/// and [`MORE_PASSES`] more where the choice is [`close`].
fn medians(
    comm: &Comm,
    grid: &[Point],
    variants: impl Fn(Collective) -> Vec<Option<Algorithm>>,
    scale: f64,
) -> Result<Vec<Vec<f64>>> {
    let variants: Vec<Vec<Option<Algorithm>>> =
        grid.iter().map(|p| variants(p.collective)).collect();
    let mut times: Vec<Vec<Vec<f64>>> =
        variants.iter().map(|v| vec![Vec::new(); v.len()]).collect();
    let mut again = vec![true; grid.len()];
    for pass in 0..PASSES + MORE_PASSES {
        if pass == PASSES {
            // Every rank has the same times (each the slowest rank's), so
            // every rank picks the same points.
            again = (variants.iter().zip(&times))
                .map(|(v, t)| close(v, &median_of(t)))
                .collect();
        }
        let todo = grid.iter().zip(&variants).zip(&mut times).zip(&again);
        for (((point, variants), times), _) in todo.filter(|(_, again)| **again) {
            let (c, bytes) = (point.collective, point.bytes);
            // Who goes first turns from pass to pass: the first variant
            // measured at a point is the slower one more often than not.
            for i in (0..variants.len()).map(|i| (i + pass) % variants.len()) {
                match variants[i] {
                    Some(a) => comm.force(a),
                    None => comm.unforce(c),
                }
                times[i].push(measure(comm, c, point.element, bytes, reps(bytes, scale))?);
            }
            comm.unforce(c);
        }
    }
    Ok(times.iter().map(|t| median_of(t)).collect())
}

/// The median of each variant's measurements.
fn median_of(times: &[Vec<f64>]) -> Vec<f64> {
    times
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t.sort_by(f64::total_cmp);
            t.get(t.len() / 2).copied().unwrap_or(f64::INFINITY)
        })
        .collect()
}

/// Whether the two fastest algorithms forced among `variants` (not the
/// choice, `None`) took times within [`CLOSE`] of each other.
fn close<A>(variants: &[Option<A>], medians: &[f64]) -> bool {
    let mut forced: Vec<f64> = (variants.iter().zip(medians))
        .filter(|(v, _)| v.is_some())
        .map(|(_, t)| *t)
        .collect();
    forced.sort_by(f64::total_cmp);
    matches!(forced[..], [a, b, ..] if b <= a * CLOSE)
}

/// Barriers for a quarter of a second before anything is measured: the
/// kernel starts the ranks where it can and spreads them over the cores
/// only once they run (the first point measured right at the start, a
/// broadcast of 8 B, took 47 us instead of 0.25).
fn warm_up(comm: &Comm) -> Result<()> {
    let start = Instant::now();
    let mut done = [0u8];
    while done[0] == 0 {
        for _ in 0..1000 {
            comm.barrier()?;
        }
        // Rank 0's clock decides, so that every rank stops together.
        done[0] = u8::from(start.elapsed().as_millis() >= 250);
        comm.bcast(0, &mut done)?;
    }
    Ok(())
}

/// The check job: at every point (`f64`), the tuned choice and every
/// algorithm forced ([`medians`]); rank 0 prints `CHECK collective
/// bytes choice choice_us best best_us`.
fn check_choices(comm: &Comm, scale: f64, max_bytes: usize) -> Result<()> {
    warm_up(comm)?;
    let grid = points(max_bytes, false);
    let variants = |c| {
        std::iter::once(None)
            .chain(runnable(comm, c).into_iter().map(Some))
            .collect()
    };
    for (point, medians) in grid.iter().zip(medians(comm, &grid, variants, scale)?) {
        let (collective, bytes) = (point.collective, point.bytes);
        let candidates = runnable(comm, collective);
        let (best, best_us) = medians[1..]
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, t)| (candidates[i], *t))
            .ok_or("no algorithm to check")?;
        let chosen = match (point.element, reduces(collective)) {
            ("i32", true) => comm.algorithm::<i32>(collective, bytes / 4, Some(&Op::SUM))?,
            (_, true) => comm.algorithm::<f64>(collective, bytes / 8, Some(&Op::SUM))?,
            (_, false) => comm.algorithm::<u8>(collective, bytes, None)?,
        };
        if comm.rank() == 0 {
            println!(
                "CHECK {} {bytes} {chosen} {:.3} {best} {best_us:.3}",
                collective.name(),
                medians[0]
            );
        }
    }
    Ok(())
}

/// Whether `collective` combines elements (its choice depends on their
/// type and operation; else on the bytes it moves alone).
fn reduces(collective: Collective) -> bool {
    matches!(
        collective,
        Collective::Reduce | Collective::Allreduce | Collective::ReduceScatter
    )
}

fn elements(collective: Collective) -> &'static [&'static str] {
    match collective {
        Collective::Reduce | Collective::Allreduce | Collective::ReduceScatter => &["f64", "i32"],
        Collective::Barrier => &["bytes"],
        _ => &["f64"],
    }
}

fn sizes(collective: Collective) -> Vec<usize> {
    match collective {
        Collective::Barrier => vec![0],
        Collective::Alltoall => SIZES.iter().copied().filter(|&s| s <= 2 << 20).collect(),
        _ => SIZES.to_vec(),
    }
}

/// The median microseconds of `reps` calls (after one untimed), each the
/// slowest rank's: a call starts after a barrier and is done when every
/// rank is (a broadcast's root alone is done first). The buffers are made
/// once, outside the time, and written before each call, as an
/// application reuses its buffers (fresh ones would time page faults);
/// every call's result is checked outside the time.
fn measure(
    comm: &Comm,
    collective: Collective,
    element: &str,
    bytes: usize,
    reps: usize,
) -> Result<f64> {
    let mut times = match element {
        "i32" => calls::<i32>(comm, collective, bytes, reps + 1)?,
        _ => calls::<f64>(comm, collective, bytes, reps + 1)?,
    };
    let mut slowest = vec![0f64; times.len()];
    comm.allreduce(&times, &mut slowest, Op::MAX)?;
    times = slowest.split_off(1);
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2].max(0.001))
}

/// `reps` calls of `collective` moving `bytes` per rank over one set of
/// buffers, each timed alone (after a barrier) and its result checked;
/// this rank's microseconds per call.
fn calls<T>(comm: &Comm, collective: Collective, bytes: usize, reps: usize) -> Result<Vec<f64>>
where
    T: onesided_collectives::Reducible + From<i8>,
{
    let (me, n) = (comm.rank(), comm.group().size() as usize);
    let count = bytes / size_of::<T>();
    let one = T::from(1);
    let sum = Op::SUM;
    let whole = matches!(
        collective,
        Collective::Scatter | Collective::Alltoall | Collective::ReduceScatter
    );
    let gathers = matches!(collective, Collective::Gather | Collective::Allgather);
    let input = vec![one; if whole { count * n } else { count }];
    let counts = vec![count; n];
    let outputs = if gathers || collective == Collective::Alltoall {
        count * n
    } else {
        count
    };
    let mut output = vec![one; outputs];
    // What the output holds before a call, and every element of it must
    // hold after, where it is checked.
    let n_t = T::from(n as i8);
    let before = match collective {
        Collective::Bcast if me == 0 => one,
        _ => T::zeroed(),
    };
    let want = match collective {
        Collective::Barrier => None,
        Collective::Reduce if me != 0 => None,
        Collective::Gather if me != 0 => None,
        Collective::Reduce | Collective::Allreduce | Collective::ReduceScatter => Some(n_t),
        _ => Some(one),
    };
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        output.fill(before);
        comm.barrier()?;
        let start = Instant::now();
        match collective {
            Collective::Barrier => comm.barrier()?,
            Collective::Bcast => comm.bcast(0, &mut output)?,
            Collective::Reduce => comm.reduce(0, &input, &mut output, sum.clone())?,
            Collective::Allreduce => comm.allreduce(&input, &mut output, sum.clone())?,
            Collective::Gather => comm.gatherv(0, &input, &mut output, &counts)?,
            Collective::Allgather => comm.allgatherv(&input, &mut output, &counts)?,
            Collective::Scatter => comm.scatterv(0, &input, &mut output, &counts)?,
            Collective::Alltoall => comm.alltoall(&input, &mut output, count)?,
            Collective::ReduceScatter => {
                comm.reduce_scatter(&input, &mut output, &counts, sum.clone())?
            }
        }
        times.push(start.elapsed().as_secs_f64() * 1e6);
        if let Some(w) = want {
            if output.iter().any(|v| *v != w) {
                return Err(format!("{}: wrong result on rank {me}", collective.name()).into());
            }
        }
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_whose_two_fastest_algorithms_are_close_get_more_passes() {
        let (a, b, none) = (Some("a"), Some("b"), None);
        assert!(close(&[a, b], &[10.0, 12.9]));
        assert!(!close(&[a, b], &[10.0, 13.1]));
        assert!(close(&[b, a, Some("c")], &[50.0, 10.0, 12.0]));
        // The choice (a repeat of one algorithm) is no rival.
        assert!(!close(&[none, a, b], &[10.0, 10.0, 20.0]));
        assert!(!close(&[a], &[10.0]));
        assert_eq!(
            median_of(&[vec![3.0, 1.0, 2.0], vec![]]),
            [2.0, f64::INFINITY]
        );
    }
}
