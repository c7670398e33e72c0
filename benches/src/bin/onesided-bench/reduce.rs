//! The reduce suite's runs: its cases, job by job, each side after the
//! other (alternating which goes first), with a CPU hog on the last core
//! during the interference cases; then the kill trials. What the cases
//! are and how they become rows: [`onesided_bench::reduce`].
//!
//! Where ranks outnumber cores, MPICH runs with its yield settings
//! ([`super::MPICH_YIELD`]): with its default busy polling, 3 ranks on 2
//! cores did not finish 9 reductions of 32 MiB in 60 s.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use onesided_bench::driver::{self, Args};
use onesided_bench::reduce::{self, Case, Kills, Outcome, Timed};
use onesided_bench::report::Row;
use onesided_bench::retries::Retries;

use super::job::{command, job, kill_group, ours_env, peer_start, Spec};
use super::Result;

/// Longest a case's job may take.
const JOB_TIMEOUT: Duration = Duration::from_secs(300);
/// Timed reductions per job.
const REPS: u32 = 9;

/// The programs the suite runs.
pub(crate) struct Programs<'a> {
    pub osrun: &'a Path,
    pub reduce_time: &'a Path,
    pub mpiexec: &'a Path,
    pub peer: &'a Path,
    pub mpich_libfabric: &'a Path,
}

/// What a side said it runs on (`loaded WHAT VALUE`): WHAT to VALUE.
pub(crate) type Loaded = BTreeMap<String, String>;

/// Runs the suite: its rows, the kill trials' tally, and what each side
/// (onesided, MPICH) said it runs on.
pub(crate) fn run(
    args: &Args,
    p: &Programs,
    retries: &mut Retries,
) -> Result<(Vec<Row>, Kills, [Loaded; 2])> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rounds: BTreeMap<Case, Vec<(Timed, Timed)>> = BTreeMap::new();
    let mut loaded: [Loaded; 2] = Default::default();
    for round in 0..args.rounds {
        eprintln!(
            "onesided-bench: reduce round {}/{} ({})",
            round + 1,
            args.rounds,
            args.provider
        );
        for case in reduce::cases(args.scale) {
            let hog = case.slow.then(|| hog(cores)).transpose()?;
            let sides = [
                ours(args, p, &case, &args.provider, false),
                peer(args, p, &case, cores),
            ];
            let first = (round % 2) as usize;
            let mut timed = [None, None];
            for k in [first, 1 - first] {
                let side = ["onesided", "MPICH"][k];
                let out = retries.run(side, || job(command(&sides[k]), JOB_TIMEOUT));
                let out = out.map_err(|e| format!("reduce {case:?} ({side}): {e}"))?;
                timed[k] = out.lines().find_map(reduce::parse);
                for (what, value) in out.lines().filter_map(driver::parse_loaded) {
                    loaded[k].insert(what, value);
                }
            }
            if let Some(mut hog) = hog {
                kill_group(&mut hog);
            }
            match timed {
                [Some(ours), Some(theirs)] => rounds.entry(case).or_default().push((ours, theirs)),
                _ => return Err(format!("reduce {case:?}: a side printed no result").into()),
            }
        }
    }
    let rows = reduce::rows(&rounds, args.slow, &args.provider, args.scale);
    let kills = kill_trials(args, p)?;
    Ok((rows, kills, loaded))
}

/// onesided's side of `case` over `provider` (`trial`: one reduction,
/// under `--ft`).
fn ours(args: &Args, p: &Programs, case: &Case, provider: &str, trial: bool) -> Spec {
    let mut argv: Vec<String> = vec!["-n".into(), case.ranks.to_string()];
    argv.extend(["--provider".into(), provider.to_string()]);
    let timeout = match trial {
        true => reduce::TRIAL_TIMEOUT_S,
        false => JOB_TIMEOUT.as_secs(),
    };
    argv.extend(["--timeout".into(), timeout.to_string()]);
    if trial {
        argv.push("--ft".into());
    }
    argv.push(p.reduce_time.display().to_string());
    argv.extend(["--len".into(), case.elements().to_string()]);
    match trial {
        true => argv.push("--trial".into()),
        false => {
            argv.extend(["--reps".into(), REPS.to_string()]);
            argv.extend(["--ids".into(), case.ids.to_string()]);
        }
    }
    if case.slow {
        argv.extend(["--slow".into(), format!("{}:{}", args.slow.0, args.slow.1)]);
    }
    let env = ours_env(args, p.mpich_libfabric);
    (p.osrun.display().to_string(), argv, env)
}

/// MPICH's side of `case`.
fn peer(args: &Args, p: &Programs, case: &Case, cores: usize) -> Spec {
    let mut argv = peer_start(args, case.ranks, case.ranks as usize > cores);
    argv.push(p.peer.display().to_string());
    argv.extend([
        case.elements().to_string(),
        REPS.to_string(),
        case.ids.to_string(),
    ]);
    if case.slow {
        argv.extend([args.slow.0.to_string(), args.slow.1.to_string()]);
    }
    (p.mpiexec.display().to_string(), argv, Vec::new())
}

/// A busy loop on the last core, in a process group of its own.
fn hog(cores: usize) -> Result<Child> {
    let child = Command::new("taskset")
        .args([
            "-c",
            &(cores - 1).to_string(),
            "sh",
            "-c",
            "while :; do :; done",
        ])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()?;
    Ok(child)
}

/// The kill trials: `t` from 9 reductions without kills, then
/// [`reduce::KILLS`] jobs of one reduction each, rank 1 killed at a
/// random instant of `[0, t]` after its reduce call returned.
fn kill_trials(args: &Args, p: &Programs) -> Result<Kills> {
    let case = Case {
        ranks: reduce::KILL_RANKS,
        bytes: reduce::scaled(reduce::KILL_BYTES, args.scale),
        ids: 1,
        slow: false,
    };
    let provider = reduce::KILL_PROVIDER;
    let calibration = job(command(&ours(args, p, &case, provider, false)), JOB_TIMEOUT)?;
    let t = (calibration.lines().find_map(reduce::parse))
        .ok_or("kill trials: the run without kills printed no result")?
        .mean_ms;
    let mut kills = Kills {
        ranks: case.ranks,
        provider: provider.to_string(),
        bytes: case.bytes,
        t_ms: t,
        ..Kills::default()
    };
    let mut rng = Rng::seeded();
    for trial in 0..reduce::KILLS {
        let delay = Duration::from_secs_f64(t / 1e3 * rng.unit());
        let (outcome, said) = kill_trial(command(&ours(args, p, &case, provider, true)), delay)?;
        if outcome != Outcome::Right {
            eprintln!("onesided-bench: kill trial {trial} (rank 1 killed after {delay:?}): {outcome:?}: {said}");
        }
        kills.add(outcome);
    }
    Ok(kills)
}

/// One kill trial: runs `cmd`, kills the process that says `armed PID`
/// `delay` later; the root's outcome and its line (or what went wrong).
fn kill_trial(mut cmd: Command, delay: Duration) -> Result<(Outcome, String)> {
    let err_path = super::tempfile("reduce-trial-err")?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&err_path)?)
        .process_group(0)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no standard output")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout)
            .lines()
            .map_while(std::io::Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(reduce::TRIAL_TIMEOUT_S + 10);
    let mut outcome = None;
    let mut said = String::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                if let Some(pid) = line.strip_prefix("armed ") {
                    let pid = pid.trim().to_string();
                    std::thread::spawn(move || {
                        std::thread::sleep(delay);
                        let _ = Command::new("kill").args(["-KILL", &pid]).status();
                    });
                } else if let Some(o) = reduce::parse_trial(&line) {
                    (outcome, said) = (Some(o), line);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            let _ = std::fs::remove_file(&err_path);
            return Ok((Outcome::Hung, "no end".into()));
        }
    }
    let status = child.wait()?;
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let tail = err.get(err.len().saturating_sub(600)..).unwrap_or(&err);
    // osrun's own timeout ended it (its status is rank 1's, 137, when
    // rank 1 died first).
    let timed_out = status.code() == Some(124) || err.contains("did not finish within --timeout");
    match outcome {
        None if timed_out => Ok((Outcome::Hung, format!("osrun's timeout: {tail}"))),
        None => Ok((
            Outcome::Failed,
            format!("no result from the root ({status}): {tail}"),
        )),
        Some(o) => Ok((o, said)),
    }
}

/// A small generator for the kill instants (xorshift, seeded by the
/// clock).
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Rng(nanos | 1)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}
