//! Jobs the suites run one at a time (a program with its arguments and
//! environment, run in a process group of its own to its end or a
//! timeout), and what both suites give their sides.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use onesided_bench::driver::{Args, Libfabric};

use super::Result;

/// A job: its program, arguments and environment.
pub(crate) type Spec = (String, Vec<String>, Vec<(String, String)>);

/// The command of `spec`.
pub(crate) fn command((program, argv, env): &Spec) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(argv);
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd
}

/// The environment of onesided's side under `args`: every rank its own
/// host with `--nolocal`, MPICH's libfabric (in `mpich_libfabric`) when
/// asked.
pub(crate) fn ours_env(args: &Args, mpich_libfabric: &Path) -> Vec<(String, String)> {
    let mut env = Vec::new();
    if args.nolocal {
        let host = onesided_fabric::world::HOST_ENV.to_string();
        env.push((host, "node{rank}".to_string()));
    }
    if args.libfabric == Libfabric::Mpich {
        let path = mpich_libfabric.display().to_string();
        env.push(("LD_LIBRARY_PATH".to_string(), path));
    }
    env
}

/// `mpiexec`'s first arguments for MPICH's side of `ranks` processes:
/// `-n`, the provider's settings, and the yield settings when the
/// processes will outnumber the cores (`crowded`, [`super::MPICH_YIELD`]).
pub(crate) fn peer_start(args: &Args, ranks: u32, crowded: bool) -> Vec<String> {
    let mut argv: Vec<String> = vec!["-n".into(), ranks.to_string()];
    let mut genv = super::mpich_env(args);
    if crowded {
        genv.extend_from_slice(&super::MPICH_YIELD);
    }
    for (k, v) in genv {
        argv.extend(["-genv".into(), k.into(), v.into()]);
    }
    argv
}

/// Kills `child`'s process group and reaps it: its status, if reaped.
pub(crate) fn kill_group(child: &mut Child) -> Option<ExitStatus> {
    // `--`: procps' kill reads `-PGID` as a signal otherwise.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    child.wait().ok()
}

/// Runs `cmd` in a process group of its own to its end: its standard
/// output.
///
/// # Errors
/// When it fails (with its standard error) or outlasts `timeout` (it is
/// killed).
pub(crate) fn job(cmd: Command, timeout: Duration) -> Result<String> {
    job_with_errors(cmd, timeout).map(|(out, _)| out)
}

/// As [`job`]: its standard output and standard error.
///
/// # Errors
/// As [`job`].
pub(crate) fn job_with_errors(mut cmd: Command, timeout: Duration) -> Result<(String, String)> {
    let out_path = super::tempfile("job-out")?;
    let err_path = super::tempfile("job-err")?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .process_group(0)
        .spawn()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = std::fs::read_to_string(&out_path).unwrap_or_default();
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    match status {
        Some(s) if s.success() => Ok((out, err)),
        Some(s) => Err(format!("exited with {s}: {out}{err}").into()),
        None => Err(format!("did not end in {timeout:?}: {out}{err}").into()),
    }
}
