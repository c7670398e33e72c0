//! `onesided-bench SUITE --np N --provider shm|tcp --peer mpich --json FILE`
//!
//! Runs each suite side by side: onesided's ranks under `osrun` (this
//! program again, in rank mode) and the MPICH peer (`benches/mpich/rma.c`,
//! built with MPICH 5.0.2's `mpicc` into `target/mpich/` by
//! `benches/mpich/build.sh` when missing) under the venv's `mpiexec` with
//! `MPIR_CVAR_CH4_NETMOD=ofi` and the same provider: each round starts the
//! sides together and hands them turns case by case
//! ([`onesided_bench::turns`]), so that case `k` of each side is measured
//! within moments of the other's (A B, B A, ...). When the ranks outnumber
//! the cores a third side runs the peer with MPICH's yield settings (rows
//! `CASE mpich-yield`). With
//! `--nolocal` every rank counts as its own host (onesided:
//! `ONESIDED_HOST=node{rank}`; MPICH: `MPIR_CVAR_NOLOCAL=1`), so both go
//! through the provider (rows `CASE nolocal`), and onesided loads the
//! libfabric MPICH loads (`--libfabric mpich`, the default there: the same
//! provider code on both sides; `--libfabric system` for Debian's). The
//! report starts with where it ran (CPU, cores, each side's libfabric,
//! MPICH's version), which every JSON row carries too. Both sides
//! check every value they move; a failure of either side fails the run.
//! Prints the table, writes JSON lines to FILE and SVG plots under
//! `target/report/`.

#![forbid(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use onesided_bench::driver::{self, Args, Libfabric, Measured, Rounds};
use onesided_bench::retries::Retries;
use onesided_bench::turns::{self, Turns, TURNS_ENV};
use onesided_bench::{report, suites};

mod job;
mod malleable;
mod reduce;
mod scale;

/// MPICH's yield settings (shared/BENCHMARKS.md) for ranks > cores.
const MPICH_YIELD: [(&str, &str); 3] = [
    ("MPIR_CVAR_CH4_PROGRESS_THROTTLE", "1"),
    ("MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT", "8"),
    ("MPIR_CVAR_POSIX_POLL_FREQUENCY", "8"),
];

/// Longest a round of a suite may take (its sides, up to three, run at
/// once, each for as long as its own and the others' turns take).
const ROUND_TIMEOUT: Duration = Duration::from_secs(2700);

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
    if world.rank() == 0 {
        let (version, path) = onesided_fabric::libfabric_loaded();
        let ep = world.endpoint();
        let (name, atomics) = (ep.granted().provider_name(), ep.granted().atomics().name());
        println!("loaded libfabric {version} {path} ({name}, {atomics} atomics)");
    }
    let turns = Turns::from_env(world.rank())?;
    suites::run(&world, suite, scale, turns)?;
    Ok(world.finalize()?)
}

fn drive(args: &[String]) -> Result<()> {
    let args = driver::parse_args(args).unwrap_or_else(|e| e.exit());
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
    // The C peers: collectives.c for the collectives suite, abi.c for the
    // abi suite (run on both sides), rma.c for the others.
    let peers = root.join("target/mpich");
    let peer_of = |suite: &str| {
        peers.join(match suite {
            "collectives" => "collectives",
            onesided_bench::abi::SUITE => "abi",
            _ => "rma",
        })
    };
    let mpiexec = root.join("target/mpich-venv/bin/mpiexec");
    let binaries = [
        peer_of("window"),
        peer_of("collectives"),
        peers.join("reduce"),
        peers.join("malleable"),
        peers.join("scale"),
        peer_of(onesided_bench::abi::SUITE),
    ];
    if peers_stale(&root.join("benches/mpich"), &binaries, &mpiexec) {
        eprintln!("onesided-bench: building the MPICH peer (benches/mpich/build.sh)");
        let status = Command::new("bash")
            .arg(root.join("benches/mpich/build.sh"))
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            return Err("benches/mpich/build.sh failed".into());
        }
    }
    let mut setup = report::Setup {
        cpu: cpu_model(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ranks: args.np,
        provider: args.provider.clone(),
        nolocal: args.nolocal,
        ..report::Setup::default()
    };
    let oversubscribed = setup.oversubscribed();
    let mpich_libfabric = root.join("target/mpich-venv/lib/mpich");
    let mut rows = Vec::new();
    let mut kills = None;
    let mut figures = Vec::new();
    let mut scaled = Vec::new();
    let mut retries = Retries::default();
    for suite in &args.suites {
        if suite == onesided_bench::scale::SUITE {
            let programs = scale::Programs {
                osrun: &osrun,
                check: &exe.with_file_name("scale-check"),
                mpiexec: &mpiexec,
                peer: &peers.join("scale"),
                mpich_libfabric: &mpich_libfabric,
            };
            let (found, [ours, theirs]) = scale::run(&args, &programs, &mut retries)?;
            let known = |m: &reduce::Loaded, k: &str| m.get(k).cloned().unwrap_or_default();
            setup.onesided_libfabric = known(&ours, "libfabric");
            setup.peer_libfabric = known(&theirs, "libfabric");
            setup.mpich = known(&theirs, "mpich");
            scaled = found;
            continue;
        }
        if suite == onesided_bench::reduce::SUITE {
            let programs = reduce::Programs {
                osrun: &osrun,
                reduce_time: &exe.with_file_name("onesided-reduce-time"),
                mpiexec: &mpiexec,
                peer: &peers.join("reduce"),
                mpich_libfabric: &mpich_libfabric,
            };
            let (found, tally, [ours, theirs]) = reduce::run(&args, &programs, &mut retries)?;
            let known = |m: &reduce::Loaded, k: &str| m.get(k).cloned().unwrap_or_default();
            setup.onesided_libfabric = known(&ours, "libfabric");
            setup.peer_libfabric = known(&theirs, "libfabric");
            setup.mpich = known(&theirs, "mpich");
            rows.extend(found);
            kills = Some(tally);
            continue;
        }
        if suite == onesided_bench::malleable::SUITE {
            let programs = malleable::Programs {
                osrun: &osrun,
                sam: &exe.with_file_name("sam"),
                mpiexec: &mpiexec,
                peer: &peers.join("malleable"),
                mpich_libfabric: &mpich_libfabric,
            };
            // The header's ranks: the most of any pair.
            setup.ranks = (onesided_bench::malleable::PAIRS.iter())
                .map(|(ns, nt)| *ns.max(nt))
                .max()
                .unwrap_or(args.np);
            let context = format!("({}, {}, {} cores)", args.provider, setup.cpu, setup.cores);
            let (found, drawn, [ours, theirs]) =
                malleable::run(&args, &programs, &context, &mut retries)?;
            let known = |m: &reduce::Loaded, k: &str| m.get(k).cloned().unwrap_or_default();
            setup.onesided_libfabric = known(&ours, "libfabric");
            setup.peer_libfabric = known(&theirs, "libfabric");
            setup.mpich = known(&theirs, "mpich");
            rows.extend(found);
            figures.extend(drawn);
            continue;
        }
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
            let peer = peer_of(suite);
            let sides = || {
                let onesided = match suite.as_str() {
                    onesided_bench::abi::SUITE => abi_ours(&args, &osrun, &peer, &mpich_libfabric),
                    _ => ours(&args, (&osrun, &exe), suite, &mpich_libfabric),
                };
                let mut sides = vec![
                    ("onesided", onesided),
                    ("mpich", mpich(&args, &mpiexec, &peer, suite, &[])),
                ];
                if oversubscribed {
                    let yielding = mpich(&args, &mpiexec, &peer, suite, &MPICH_YIELD);
                    sides.push(("mpich-yield", yielding));
                }
                sides
            };
            // MPICH over libfabric 2.5.1's shm exits with status 11,
            // rarely, after finishing: the round runs again.
            let results = retries.run("", || together(sides(), args.np))?;
            for (what, value) in &results[0].loaded {
                if what == "libfabric" {
                    setup.onesided_libfabric = value.clone();
                }
            }
            for (what, value) in &results[1].loaded {
                match what.as_str() {
                    "libfabric" => setup.peer_libfabric = value.clone(),
                    "mpich" => setup.mpich = value.clone(),
                    _ => {}
                }
            }
            plain.add(false, &results[0].measured);
            yielding.add(false, &results[0].measured);
            plain.add(true, &results[1].measured);
            if let Some(y) = results.get(2) {
                yielding.add(true, &y.measured);
            }
        }
        let nolocal = if args.nolocal { " nolocal" } else { "" };
        rows.extend(plain.rows(args.np, &args.provider, nolocal));
        if oversubscribed {
            let suffix = format!("{nolocal} mpich-yield");
            rows.extend(yielding.rows(args.np, &args.provider, &suffix));
        }
    }
    report::mark_guarantees(&mut rows);
    print!("{}", setup.lines());
    if !rows.is_empty() {
        print!("{}", report::table(&rows));
    }
    if rows.iter().any(|r| r.series.ends_with('*')) {
        println!("* more processes than the {} cores", setup.cores);
    }
    let loads: Vec<&report::Row> = rows.iter().filter(|r| r.master_load.is_some()).collect();
    if !loads.is_empty() {
        println!("master load (reduce; per second over each run, median of rounds):");
        println!(
            "{:<24} {:>10} {:>12} {:>10} {:>12}",
            "case", "msgs in", "B in", "msgs out", "B out"
        );
        for r in loads {
            if let Some(l) = r.master_load {
                println!(
                    "{:<24} {:>10.0} {:>12.0} {:>10.0} {:>12.0}",
                    r.case(),
                    l.messages_in,
                    l.bytes_in,
                    l.messages_out,
                    l.bytes_out
                );
            }
        }
    }
    if let Some(k) = &kills {
        println!("{}", k.line());
    }
    if let Some(line) = retries.line() {
        println!("{line}");
    }
    if !scaled.is_empty() {
        print!("{}", onesided_bench::scale::table(&scaled));
    }
    if let Some(file) = &args.json {
        let mut out = std::fs::File::create(file)?;
        for row in &rows {
            writeln!(out, "{}", report::json_line(row, &setup))?;
        }
        if let Some(k) = &kills {
            let line = serde_json::json!({
                "suite": "reduce-kill",
                "ranks": k.ranks,
                "bytes": k.bytes,
                "t_ms": k.t_ms,
                "trials": k.trials(),
                "right": k.right,
                "wrong": k.wrong,
                "failed": k.failed,
                "hung": k.hung,
                "cpu": setup.cpu,
                "cores": setup.cores,
                "provider": k.provider,
            });
            writeln!(out, "{line}")?;
        }
        for (side, count, first) in retries.sides() {
            let line = serde_json::json!({
                "suite": "retries",
                "side": side,
                "retries": count,
                "first": first,
                "cpu": setup.cpu,
                "cores": setup.cores,
            });
            writeln!(out, "{line}")?;
        }
        for p in &scaled {
            let line = serde_json::json!({
                "suite": onesided_bench::scale::SUITE,
                "case": p.op,
                "ranks": p.ranks,
                "messages_max": p.messages.0,
                "messages_mean": p.messages.1,
                "bytes_max": p.bytes,
                "pmi_max": p.pmi,
                "receive_memory_max": p.receive_memory,
                "onesided_us": p.onesided_us,
                "peer_us": p.peer_us,
                "cpu": setup.cpu,
                "cores": setup.cores,
                "provider": args.provider,
                "nolocal": args.nolocal,
            });
            writeln!(out, "{line}")?;
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
    // The malleable suite draws the study's figures instead.
    let plotted: Vec<report::Row> = (rows.iter())
        .filter(|r| r.suite != onesided_bench::malleable::SUITE)
        .cloned()
        .collect();
    let mut plots = report::svg_plots(&plotted, &dir, &prefix)?;
    let malleable_prefix = format!(
        "{}{}-{}",
        args.provider,
        if args.nolocal { "-nolocal" } else { "" },
        onesided_bench::malleable::SUITE
    );
    plots.extend(report::bar_plots(&figures, &dir, &malleable_prefix)?);
    if !scaled.is_empty() {
        plots.extend(scale_plots(&scaled, &dir, &prefix, &setup)?);
    }
    if let Some(k) = &kills {
        let title = format!(
            "reduce: rank 1 killed in each of {} reductions of {} ({} ranks, {})",
            k.trials(),
            report::size_label(k.bytes),
            k.ranks,
            k.provider
        );
        let bars = [
            ("right", k.right),
            ("wrong", k.wrong),
            ("clear error", k.failed),
            ("hung", k.hung),
        ];
        let path = dir.join(format!("{prefix}-reduce-kill.svg"));
        std::fs::write(&path, report::count_plot(&title, &bars, k.trials())?)?;
        plots.push(path);
    }
    println!("plots: {}", dir.display());
    for p in plots {
        println!("  {}", p.display());
    }
    Ok(())
}

/// Whether the MPICH peers must be built: the venv's `mpiexec` or a
/// peer is missing, or a file under `sources` (`benches/mpich/`) is newer
/// than a peer: a peer built from older sources would time the cases by
/// other rules than this side.
fn peers_stale(sources: &Path, binaries: &[PathBuf], mpiexec: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest = std::fs::read_dir(sources)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| modified(&entry.path()))
        .max();
    !mpiexec.exists()
        || binaries.iter().any(|b| match (modified(b), newest) {
            (None, _) => true,
            (Some(built), Some(source)) => source > built,
            (Some(_), None) => false,
        })
}

/// The CPU model, as `/proc/cpuinfo` names it (empty when unknown).
fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    (info.lines())
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map_or_else(String::new, |(_, model)| model.trim().to_string())
}

/// onesided's side of a round: this program in rank mode under `osrun`
/// ([`under_osrun`]).
fn ours(args: &Args, (osrun, exe): (&Path, &Path), suite: &str, mpich_libfabric: &Path) -> Command {
    let mut cmd = under_osrun(args, osrun, mpich_libfabric);
    cmd.arg(exe)
        .arg("--rank")
        .arg(suite)
        .arg(args.scale.to_string());
    cmd
}

/// onesided's side of the abi suite: the same C program as MPICH's side,
/// built against the standard ABI, under `osrun --mpi` (onesided's
/// `libmpi_abi.so.1` first on its library path).
fn abi_ours(args: &Args, osrun: &Path, program: &Path, mpich_libfabric: &Path) -> Command {
    let mut cmd = under_osrun(args, osrun, mpich_libfabric);
    cmd.arg("--mpi")
        .arg(program)
        .arg(onesided_bench::abi::SUITE)
        .arg(args.scale.to_string());
    cmd
}

/// `osrun` with `args`' ranks, provider and the round's timeout, every
/// rank its own host with `--nolocal`, and MPICH's libfabric (in
/// `mpich_libfabric`) first on the library path when `args` say so; the
/// program and its arguments follow.
fn under_osrun(args: &Args, osrun: &Path, mpich_libfabric: &Path) -> Command {
    let mut cmd = Command::new(osrun);
    cmd.arg("-n")
        .arg(args.np.to_string())
        .arg("--provider")
        .arg(&args.provider)
        .arg("--timeout")
        .arg(ROUND_TIMEOUT.as_secs().to_string());
    if args.nolocal {
        cmd.env(onesided_fabric::world::HOST_ENV, "node{rank}");
    }
    if args.libfabric == Libfabric::Mpich {
        cmd.env("LD_LIBRARY_PATH", library_path(mpich_libfabric));
    }
    cmd
}

/// `LD_LIBRARY_PATH` with `dir` first.
fn library_path(dir: &Path) -> std::ffi::OsString {
    let mut path = std::ffi::OsString::from(dir);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    path
}

/// An MPICH side of a round: the C peer under the venv's `mpiexec`, with
/// `env` on top of the provider settings.
fn mpich(args: &Args, mpiexec: &Path, peer: &Path, suite: &str, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(mpiexec);
    cmd.arg("-n").arg(args.np.to_string());
    let mut genv = mpich_env(args);
    genv.extend_from_slice(env);
    for (k, v) in genv {
        cmd.arg("-genv").arg(k).arg(v);
    }
    cmd.arg(peer).arg(suite).arg(args.scale.to_string());
    cmd
}

/// MPICH's settings for `args`' provider (`-genv` pairs): the OFI
/// netmod, the provider, loopback for tcp, no shared memory with
/// `--nolocal`.
fn mpich_env(args: &Args) -> Vec<(&'static str, &str)> {
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
    genv
}

/// A side of a round while it runs.
struct Side {
    name: &'static str,
    child: Child,
    /// Where each rank's turns are handed out (read and write: the FIFO
    /// never blocks an open, and outlives every reader).
    go: Vec<File>,
    /// A byte per rank that ended its turn (or said it is ready).
    done: Receiver<()>,
    done_path: PathBuf,
    out: PathBuf,
    err: PathBuf,
    status: Option<ExitStatus>,
}

impl Side {
    /// Waits until `np` ranks ended their turn, or the side exited.
    ///
    /// # Errors
    /// Past `deadline` (the side is killed), or an I/O error.
    fn collect(&mut self, np: u32, deadline: Instant) -> Result<()> {
        let mut ended = 0;
        while ended < np {
            match self.done.recv_timeout(Duration::from_millis(20)) {
                Ok(()) => ended += 1,
                Err(e) => {
                    if let Some(status) = self.child.try_wait()? {
                        self.status = Some(status);
                        return Ok(());
                    }
                    if Instant::now() > deadline {
                        self.kill();
                        return Err(format!("{} side did not finish in time", self.name).into());
                    }
                    // Every rank closed its end: the side is exiting.
                    if e == RecvTimeoutError::Disconnected {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
        Ok(())
    }

    /// Kills the side's process group and reaps it.
    fn kill(&mut self) {
        self.status = job::kill_group(&mut self.child);
    }
}

/// What a side printed: its result lines, and what it said it runs on
/// ([`driver::parse_loaded`]).
struct Output {
    measured: Vec<Measured>,
    loaded: Vec<(String, String)>,
}

impl Output {
    fn parse(stdout: &str) -> Output {
        Output {
            measured: stdout.lines().filter_map(driver::parse_line).collect(),
            loaded: stdout.lines().filter_map(driver::parse_loaded).collect(),
        }
    }
}

/// Runs the sides of a round at once, handing turns case by case
/// ([`onesided_bench::turns`]); each side's output, or the first side's
/// error (with its stderr). Each side runs in its own process group; a
/// round that takes longer than [`ROUND_TIMEOUT`] is killed.
fn together(sides: Vec<(&'static str, Command)>, np: u32) -> Result<Vec<Output>> {
    use std::os::unix::process::CommandExt;
    let dir = tempfile("turns")?;
    std::fs::create_dir_all(&dir)?;
    let deadline = Instant::now() + ROUND_TIMEOUT;
    let mut running: Vec<Side> = Vec::new();
    let started = (|| -> Result<()> {
        for (name, mut cmd) in sides {
            let path = dir.join(name);
            let done_path = fifo(&path, "done")?;
            let go = (0..np)
                .map(|rank| {
                    let go = fifo(&path, &format!("go.{rank}"))?;
                    Ok(OpenOptions::new().read(true).write(true).open(go)?)
                })
                .collect::<Result<Vec<File>>>()?;
            let (tx, done) = std::sync::mpsc::channel();
            let reading = done_path.clone();
            // Blocks in the open until a rank opens its end; ends when every
            // rank closed it (or after `close_done` below).
            std::thread::spawn(move || {
                let Ok(mut file) = File::open(&reading) else {
                    return;
                };
                let mut bytes = [0u8; 64];
                while let Ok(k @ 1..) = file.read(&mut bytes) {
                    if (0..k).any(|_| tx.send(()).is_err()) {
                        return;
                    }
                }
            });
            let (out, err) = (
                tempfile(&format!("{name}.out"))?,
                tempfile(&format!("{name}.err"))?,
            );
            let child = cmd
                .env(TURNS_ENV, &path)
                .stdin(Stdio::null())
                .stdout(File::create(&out)?)
                .stderr(File::create(&err)?)
                .process_group(0)
                .spawn()?;
            running.push(Side {
                name,
                child,
                go,
                done,
                done_path,
                out,
                err,
                status: None,
            });
        }
        // Every side ready (or gone), then a turn each per case.
        for side in &mut running {
            side.collect(np, deadline)?;
        }
        for k in 0.. {
            if running.iter().all(|s| s.status.is_some()) {
                break;
            }
            for i in turns::order(k, running.len()) {
                let side = &mut running[i];
                if side.status.is_none() {
                    for go in &mut side.go {
                        go.write_all(&[1])?;
                    }
                    side.collect(np, deadline)?;
                }
            }
        }
        Ok(())
    })();
    let mut results = Vec::new();
    for side in &mut running {
        if side.status.is_none() {
            side.kill();
        }
        // Ends a reader still blocked in its open (a side that never
        // started): a writer comes and goes.
        drop(
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(&side.done_path),
        );
        let stdout = std::fs::read_to_string(&side.out).unwrap_or_default();
        let stderr = std::fs::read_to_string(&side.err).unwrap_or_default();
        let _ = std::fs::remove_file(&side.out);
        let _ = std::fs::remove_file(&side.err);
        results.push(match side.status {
            Some(s) if s.success() => Ok(Output::parse(&stdout)),
            Some(s) => Err(format!("{} side failed ({s}):\n{stderr}", side.name)),
            None => Err(format!("{} side could not be reaped", side.name)),
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    started?;
    results.into_iter().map(|r| r.map_err(Into::into)).collect()
}

/// Makes the FIFO `PATH.what`.
fn fifo(path: &Path, what: &str) -> Result<PathBuf> {
    let fifo = PathBuf::from(format!("{}.{what}", path.display()));
    let status = Command::new("mkfifo").arg(&fifo).status()?;
    if !status.success() {
        return Err(format!("mkfifo {} failed", fifo.display()).into());
    }
    Ok(fifo)
}

fn tempfile(what: &str) -> Result<PathBuf> {
    Ok(std::env::temp_dir().join(format!("onesided-bench-{}-{what}", std::process::id())))
}

/// The scale suite's plots: messages per rank (the most) and time
/// against the process count, log-log, a line per operation (MPICH's
/// time dashed).
fn scale_plots(
    points: &[onesided_bench::scale::Point],
    dir: &Path,
    prefix: &str,
    setup: &report::Setup,
) -> Result<Vec<PathBuf>> {
    let mut ops: Vec<&str> = points.iter().map(|p| p.op.as_str()).collect();
    ops.dedup();
    let of =
        |op: &str, y: &dyn Fn(&onesided_bench::scale::Point) -> Option<f64>| -> Vec<(f64, f64)> {
            (points.iter().filter(|p| p.op == op))
                .filter_map(|p| Some((f64::from(p.ranks), y(p)?)))
                .collect()
        };
    let messages: Vec<report::LogLine> = (ops.iter())
        .map(|op| {
            (
                op.to_string(),
                of(op, &|p| Some(p.messages.0 as f64)),
                Vec::new(),
            )
        })
        .collect();
    let times: Vec<report::LogLine> = (ops.iter())
        .map(|op| {
            (
                op.to_string(),
                of(op, &|p| Some(p.onesided_us)),
                of(op, &|p| p.peer_us),
            )
        })
        .collect();
    let context = format!("({}, {}, {} cores)", setup.provider, setup.cpu, setup.cores);
    let mut written = Vec::new();
    for (name, title, y, lines) in [
        (
            "messages",
            "messages per rank (most)",
            "messages per rank",
            &messages,
        ),
        (
            "time",
            "time per operation (MPICH dashed)",
            "time (µs)",
            &times,
        ),
    ] {
        let path = dir.join(format!("{prefix}-scale-{name}.svg"));
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            &path,
            report::log_log_plot(&format!("scale: {title} {context}"), y, lines)?,
        )?;
        written.push(path);
    }
    Ok(written)
}
