//! `onesided-bench SUITE --np N --provider shm|tcp --peer mpich --json FILE`
//!
//! Runs each suite side by side: onesided's ranks under `osrun` (this
//! program again, in rank mode) and the MPICH peer (`benches/mpich/rma.c`,
//! built with MPICH 5.0.2's `mpicc` into `target/mpich/` by
//! `benches/mpich/build.sh` when missing) under the venv's `mpiexec` with
//! `MPIR_CVAR_CH4_NETMOD=ofi` and the same provider, alternating A B A B.
//! When the ranks outnumber the cores the peer runs a second time per
//! round with MPICH's yield settings (rows `CASE mpich-yield`). With
//! `--nolocal` every rank counts as its own host (onesided:
//! `ONESIDED_HOST=node{rank}`; MPICH: `MPIR_CVAR_NOLOCAL=1`), so both go
//! through the provider (rows `CASE nolocal`). Both sides
//! check every value they move; a failure of either side fails the run.
//! Prints the table, writes JSON lines to FILE and SVG plots under
//! `target/report/`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use onesided_bench::driver::{self, Args, Measured, Rounds};
use onesided_bench::{report, suites};

/// MPICH's yield settings (shared/BENCHMARKS.md) for ranks > cores.
const MPICH_YIELD: [(&str, &str); 3] = [
    ("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1"),
    ("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "8"),
    ("MPIR_CVAR_POSIX_POLL_FREQUENCY", "8"),
];

/// Longest a side may run one suite.
const SIDE_TIMEOUT: Duration = Duration::from_secs(900);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--rank") {
        rank(&args[1..])
    } else {
        drive(&args)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onesided-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Rank mode: `--rank SUITE SCALE`, started by osrun.
fn rank(args: &[String]) -> Result<()> {
    let suite = args.first().ok_or("--rank needs a suite")?;
    let scale = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let world = onesided_fabric::World::init()?;
    // For harnesses that check what a run leaves behind (not a result line).
    println!("pid {} {}", world.rank(), std::process::id());
    suites::run(&world, suite, scale)?;
    Ok(world.finalize()?)
}

fn drive(args: &[String]) -> Result<()> {
    let args = driver::parse_args(args, &suites::SUITES)?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no repository root")?
        .to_path_buf();
    let exe = std::env::current_exe()?;
    let osrun = exe.with_file_name("osrun");
    if !osrun.exists() {
        return Err(format!(
            "{} is missing: cargo build --release --workspace --bins",
            osrun.display()
        )
        .into());
    }
    // The C peers: collectives.c for the collectives suite, rma.c for the
    // others.
    let peers = root.join("target/mpich");
    let peer_of = |suite: &str| {
        peers.join(if suite == "collectives" {
            "collectives"
        } else {
            "rma"
        })
    };
    let mpiexec = root.join("target/mpich-venv/bin/mpiexec");
    if !peer_of("window").exists() || !peer_of("collectives").exists() || !mpiexec.exists() {
        eprintln!("onesided-bench: building the MPICH peer (benches/mpich/build.sh)");
        let status = Command::new("bash")
            .arg(root.join("benches/mpich/build.sh"))
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            return Err("benches/mpich/build.sh failed".into());
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let oversubscribed = args.np as usize > cores;
    let mut rows = Vec::new();
    for suite in &args.suites {
        let mut plain = Rounds::default();
        let mut yielding = Rounds::default();
        for round in 0..args.rounds {
            eprintln!(
                "onesided-bench: {suite} round {}/{} ({} ranks, {})",
                round + 1,
                args.rounds,
                args.np,
                args.provider
            );
            let ours = ours(&args, &osrun, &exe, suite)?;
            plain.add(false, &ours);
            yielding.add(false, &ours);
            let peer = peer_of(suite);
            plain.add(true, &mpich(&args, &mpiexec, &peer, suite, &[])?);
            if oversubscribed {
                yielding.add(true, &mpich(&args, &mpiexec, &peer, suite, &MPICH_YIELD)?);
            }
        }
        let nolocal = if args.nolocal { " nolocal" } else { "" };
        rows.extend(plain.rows(args.np, &args.provider, nolocal));
        if oversubscribed {
            let suffix = format!("{nolocal} mpich-yield");
            rows.extend(yielding.rows(args.np, &args.provider, &suffix));
        }
    }
    print!("{}", report::table(&rows));
    if let Some(file) = &args.json {
        let mut out = std::fs::File::create(file)?;
        for row in &rows {
            writeln!(out, "{}", report::json_line(row))?;
        }
        println!("json: {file}");
    }
    let dir = root.join("target/report");
    let prefix = format!(
        "{}-{}{}",
        args.np,
        args.provider,
        if args.nolocal { "-nolocal" } else { "" }
    );
    let plots = report::svg_plots(&rows, &dir, &prefix)?;
    println!("plots: {}", dir.display());
    for p in plots {
        println!("  {}", p.display());
    }
    Ok(())
}

fn ours(args: &Args, osrun: &Path, exe: &Path, suite: &str) -> Result<Vec<Measured>> {
    let mut cmd = Command::new(osrun);
    cmd.arg("-n")
        .arg(args.np.to_string())
        .arg("--provider")
        .arg(&args.provider)
        .arg("--timeout")
        .arg(SIDE_TIMEOUT.as_secs().to_string())
        .arg(exe)
        .arg("--rank")
        .arg(suite)
        .arg(args.scale.to_string());
    if args.nolocal {
        cmd.env(onesided_fabric::world::HOST_ENV, "node{rank}");
    }
    run("onesided", cmd)
}

/// Runs the MPICH peer; a run that dies without a check failing (MPICH
/// over libfabric 2.5.1's shm exits with status 11, rarely, after
/// finishing) is run once more, with a warning.
fn mpich(
    args: &Args,
    mpiexec: &Path,
    peer: &Path,
    suite: &str,
    env: &[(&str, &str)],
) -> Result<Vec<Measured>> {
    let command = || {
        let mut cmd = Command::new(mpiexec);
        cmd.arg("-n").arg(args.np.to_string());
        let mut genv = vec![
            ("MPIR_CVAR_CH4_NETMOD", "ofi"),
            ("FI_PROVIDER", args.provider.as_str()),
        ];
        if args.provider == "tcp" {
            genv.push(("FI_TCP_IFACE", "lo"));
        }
        if args.nolocal {
            genv.push(("MPIR_CVAR_NOLOCAL", "1"));
        }
        genv.extend_from_slice(env);
        for (k, v) in genv {
            cmd.arg("-genv").arg(k).arg(v);
        }
        cmd.arg(peer).arg(suite).arg(args.scale.to_string());
        cmd
    };
    match run("mpich", command()) {
        // A check that failed says "... expected X found Y": no retry.
        Err(e) if !(e.to_string().contains(" expected ") && e.to_string().contains(" found ")) => {
            eprintln!("onesided-bench: warning: {e}; running the MPICH side again");
            run("mpich", command())
        }
        result => result,
    }
}

/// Runs a side in its own process group, killed after [`SIDE_TIMEOUT`];
/// its result lines, or an error with its stderr.
fn run(side: &str, mut cmd: Command) -> Result<Vec<Measured>> {
    use std::os::unix::process::CommandExt;
    let out = tempfile(side, "out")?;
    let err = tempfile(side, "err")?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out)?)
        .stderr(std::fs::File::create(&err)?)
        .process_group(0)
        .spawn()?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() > SIDE_TIMEOUT {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&err);
    match status {
        Some(s) if s.success() => Ok(stdout.lines().filter_map(driver::parse_line).collect()),
        Some(s) => Err(format!("{side} side failed ({s}):\n{stderr}").into()),
        None => Err(format!("{side} side did not finish within {SIDE_TIMEOUT:?}").into()),
    }
}

fn tempfile(side: &str, what: &str) -> Result<PathBuf> {
    Ok(std::env::temp_dir().join(format!(
        "onesided-bench-{}-{side}.{what}",
        std::process::id()
    )))
}
