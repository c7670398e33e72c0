//! The malleable suite's runs: each run of [`malleable::runs`] as a job of
//! each side, one after the other (alternating which goes first, round
//! by round): `sam` under `osrun --standby 2` with a file written for it,
//! and the peer `benches/mpich/malleable.c` under the venv's `mpiexec`.
//! What the runs are and how they become rows and figures:
//! [`onesided_bench::malleable`].
//!
//! Where the processes outnumber the cores, MPICH runs with its yield
//! settings ([`super::MPICH_YIELD`]), as in the reduce suite.

use std::path::Path;
use std::time::Duration;

use onesided_bench::driver::{self, Args};
use onesided_bench::malleable::{self, Results, Run};
use onesided_bench::report::{Bars, Row};
use onesided_bench::retries::Retries;

use super::job::{command, job, ours_env, peer_start, Spec};
use super::reduce::Loaded;
use super::Result;

/// Longest a run's job may take.
const JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// The programs the suite runs.
pub(crate) struct Programs<'a> {
    pub osrun: &'a Path,
    pub sam: &'a Path,
    pub mpiexec: &'a Path,
    pub peer: &'a Path,
    pub mpich_libfabric: &'a Path,
}

/// Runs the suite: its rows, the study's figures, and what each side
/// (onesided, MPICH) said it runs on.
pub(crate) fn run(
    args: &Args,
    p: &Programs,
    context: &str,
    retries: &mut Retries,
) -> Result<(Vec<Row>, Vec<Bars>, [Loaded; 2])> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let grid = malleable::grid(args.scale);
    let file = super::tempfile("sam.toml")?;
    let mut results = Results::new();
    let mut loaded: [Loaded; 2] = Default::default();
    for round in 0..args.rounds {
        eprintln!(
            "onesided-bench: malleable round {}/{} ({}, grid {grid})",
            round + 1,
            args.rounds,
            args.provider
        );
        for r in malleable::runs() {
            std::fs::write(&file, malleable::sam_file(&r, grid))?;
            let sides = [ours(args, p, &r, &file), peer(args, p, &r, grid, cores)];
            let first = (round % 2) as usize;
            let entry = results.entry(r).or_default();
            for k in [first, 1 - first] {
                let side = malleable::SIDES[k];
                let out = retries.run(side, || job(command(&sides[k]), JOB_TIMEOUT));
                let out = out.map_err(|e| format!("malleable {r:?} ({side}): {e}"))?;
                let timed = out.lines().find_map(malleable::parse);
                let timed = timed.ok_or_else(|| {
                    format!("malleable {r:?}: {} printed no result", malleable::SIDES[k])
                })?;
                entry[k].push(timed);
                for (what, value) in out.lines().filter_map(driver::parse_loaded) {
                    loaded[k].insert(what, value);
                }
            }
        }
    }
    let _ = std::fs::remove_file(&file);
    let rows = malleable::rows(&results, &args.provider, cores);
    let figures = malleable::figures(&results, context, cores);
    Ok((rows, figures, loaded))
}

/// onesided's side of `r`: `sam` reading `file`.
fn ours(args: &Args, p: &Programs, r: &Run, file: &Path) -> Spec {
    let mut argv: Vec<String> = vec!["-n".into(), r.ns.to_string()];
    argv.extend(["--provider".into(), args.provider.clone()]);
    argv.extend(["--timeout".into(), JOB_TIMEOUT.as_secs().to_string()]);
    argv.extend(["--standby".into(), malleable::STANDBY.to_string()]);
    argv.push(p.sam.display().to_string());
    argv.push(file.display().to_string());
    let env = ours_env(args, p.mpich_libfabric);
    (p.osrun.display().to_string(), argv, env)
}

/// MPICH's side of `r`.
fn peer(args: &Args, p: &Programs, r: &Run, grid: u32, cores: u32) -> Spec {
    let mut argv = peer_start(args, r.ns, r.ns.max(r.nt) > cores);
    argv.push(p.peer.display().to_string());
    argv.extend(malleable::peer_args(r, grid));
    (p.mpiexec.display().to_string(), argv, Vec::new())
}
