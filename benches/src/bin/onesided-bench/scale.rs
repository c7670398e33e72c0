//! The scale suite's runs: for each process count up to `--np`
//! ([`onesided_bench::scale::ranks`]), each round one job per side,
//! alternating which goes first: `scale-check` under `osrun`, and
//! `benches/mpich/scale.c` under `mpiexec` (with MPICH's yield settings
//! where the ranks outnumber the cores). An MPICH job that fails or
//! outlasts its timeout is said and left out (its rows show `-`); the
//! suite goes on. What becomes of the lines: [`onesided_bench::scale`].

use std::path::Path;
use std::time::Duration;

use onesided_bench::driver::{self, Args};
use onesided_bench::retries::Retries;
use onesided_bench::scale::{self, Point, Run};

use super::job::{command, job_with_errors, ours_env, peer_start, Spec};
use super::reduce::Loaded;
use super::Result;

/// Longest one side's job may take.
const JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// The programs the suite runs.
pub(crate) struct Programs<'a> {
    pub osrun: &'a Path,
    pub check: &'a Path,
    pub mpiexec: &'a Path,
    pub peer: &'a Path,
    pub mpich_libfabric: &'a Path,
}

/// Runs the suite: a point per operation and process count, and what
/// each side (onesided, MPICH) said it runs on.
pub(crate) fn run(
    args: &Args,
    p: &Programs,
    retries: &mut Retries,
) -> Result<(Vec<Point>, [Loaded; 2])> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut points = Vec::new();
    let mut loaded: [Loaded; 2] = Default::default();
    for ranks in scale::ranks(args.np) {
        let (mut ours, mut theirs): (Vec<Run>, Vec<Run>) = (Vec::new(), Vec::new());
        for round in 0..args.rounds {
            eprintln!(
                "onesided-bench: scale {ranks} ranks, round {}/{} ({})",
                round + 1,
                args.rounds,
                args.provider
            );
            let sides = [ours_spec(args, p, ranks), peer_spec(args, p, ranks, cores)];
            let first = (round % 2) as usize;
            for k in [first, 1 - first] {
                let side = ["onesided", "MPICH"][k];
                let out = retries.run(side, || job_with_errors(command(&sides[k]), JOB_TIMEOUT));
                if let Ok((out, _)) = &out {
                    loaded[k].extend(out.lines().filter_map(driver::parse_loaded));
                }
                match (k, out) {
                    (0, out) => {
                        let (out, err) =
                            out.map_err(|e| format!("scale {ranks} ranks: onesided: {e}"))?;
                        ours.push(scale::collect(out.lines().chain(err.lines())));
                    }
                    (_, Ok((out, _))) => theirs.push(scale::collect(out.lines())),
                    (_, Err(e)) => {
                        let e = e.to_string();
                        let tail = e.get(e.len().saturating_sub(300)..).unwrap_or(&e);
                        eprintln!("onesided-bench: scale {ranks} ranks: MPICH left out: {tail}");
                    }
                }
            }
        }
        points.extend(scale::points(ranks, &ours, &theirs));
    }
    Ok((points, loaded))
}

/// onesided's side at `ranks` processes.
fn ours_spec(args: &Args, p: &Programs, ranks: u32) -> Spec {
    let argv: Vec<String> = vec![
        "-n".into(),
        ranks.to_string(),
        "--provider".into(),
        args.provider.clone(),
        "--timeout".into(),
        JOB_TIMEOUT.as_secs().to_string(),
        p.check.display().to_string(),
    ];
    let mut env = ours_env(args, p.mpich_libfabric);
    // The counters at exit: what `World::finalize` sent.
    env.push((onesided_fabric::stats::STATS_ENV.into(), "1".into()));
    (p.osrun.display().to_string(), argv, env)
}

/// MPICH's side at `ranks` processes.
fn peer_spec(args: &Args, p: &Programs, ranks: u32, cores: usize) -> Spec {
    let mut argv = peer_start(args, ranks, ranks as usize > cores);
    argv.push(p.peer.display().to_string());
    (p.mpiexec.display().to_string(), argv, Vec::new())
}
