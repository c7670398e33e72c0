//! onesided-tests: the harness of the multi-process integration tests.
//!
//! Tests start real processes over real libfabric providers: `osrun` (and
//! MPICH's `mpiexec.hydra`) launching the rank programs of this crate
//! (`fabric-check`, `rma-check`, `coll-check`, `threads-check`) and the
//! examples, and Slurm's `srun` where `scripts/slurm.sh` started it. Each run has a
//! timeout, after which its whole process group is killed; after each run
//! the harness checks that no process it started is left and that no `shm`
//! provider file of theirs is left in `/dev/shm`. Runs are serialised: the
//! machines have two cores, and tests must not measure each other.
//!
//! The binaries come from the same `target/<profile>/` directory as the test
//! executable; build them first (`cargo build --workspace --bins
//! --examples`, which the README's test command does).

#![forbid(unsafe_code)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());

/// Takes the lock that serialises multi-process runs.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// `target/<profile>/`, where the binaries are.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("test executable lives in target/<profile>/deps")
        .to_path_buf()
}

/// A binary of the workspace (`osrun`, `fabric-check`) or an example
/// (`examples/hello`).
pub fn binary(name: &str) -> PathBuf {
    let path = target_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing: build it first with `cargo build --workspace --lib --bins --examples` (same profile as the tests)",
        path.display()
    );
    path
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    /// Exit status of the launcher.
    pub status: ExitStatus,
    /// Its standard output (the ranks' included).
    pub stdout: String,
    /// Its standard error (the ranks' included).
    pub stderr: String,
    /// PIDs the ranks reported (`pid RANK PID` lines).
    pub pids: Vec<u32>,
    /// The process group of the launcher and everything it started.
    pub group: i32,
}

impl Outcome {
    /// Whether a process of the launcher's group is still there.
    pub fn group_alive(&self) -> bool {
        Command::new("kill")
            .args(["-0", "--", &format!("-{}", self.group)])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Outcome {
    /// Exit code, or 128 + signal.
    pub fn code(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        self.status
            .code()
            .unwrap_or_else(|| 128 + self.status.signal().unwrap_or(0))
    }

    /// Panics with the whole output unless the run succeeded.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "run failed ({}):\n{self}",
            self.code()
        );
        self
    }

    /// Panics unless `line` appears in standard output.
    pub fn assert_stdout_has(&self, text: &str) -> &Self {
        assert!(self.stdout.contains(text), "stdout lacks {text:?}:\n{self}");
        self
    }

    /// Panics unless `text` appears in standard error.
    pub fn assert_stderr_has(&self, text: &str) -> &Self {
        assert!(self.stderr.contains(text), "stderr lacks {text:?}:\n{self}");
        self
    }

    /// Number of standard-output lines containing `text`.
    pub fn count(&self, text: &str) -> usize {
        self.stdout.lines().filter(|l| l.contains(text)).count()
    }

    /// The counters each rank printed at exit (`ONESIDED_STATS=1`), in
    /// order of rank.
    pub fn stats(&self) -> Vec<RankStats> {
        let mut all: Vec<RankStats> = (self.stderr.lines())
            .filter(|l| l.starts_with("{\"onesided_stats\":"))
            .map(|l| RankStats(l.to_string()))
            .collect();
        all.sort_by_key(|s| s.get("rank"));
        all
    }
}

/// One rank's line of `ONESIDED_STATS=1`.
#[derive(Debug, Clone)]
pub struct RankStats(pub String);

impl RankStats {
    /// The number after the first `"name":` (0 when absent): a top-level
    /// counter such as `messages`, `receive_memory` or `pmi_requests`.
    pub fn get(&self, name: &str) -> u64 {
        let key = format!("\"{name}\":");
        let Some(at) = self.0.find(&key) else {
            return 0;
        };
        let digits: String = (self.0[at + key.len()..].chars())
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap_or(0)
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--- stdout\n{}--- stderr\n{}---",
            self.stdout, self.stderr
        )
    }
}

/// Runs `command` in its own process group with `timeout`; kills the group
/// and panics if it runs over. Afterwards checks that the processes the
/// ranks reported are gone and left nothing in `/dev/shm`.
pub fn run(command: Command, timeout: Duration) -> Outcome {
    run_reading_stderr(command, timeout, true)
}

/// As [`run`], with the command's standard error a pipe whose reader is
/// gone before the command writes to it (`Outcome::stderr` is empty).
pub fn run_stderr_closed(command: Command, timeout: Duration) -> Outcome {
    run_reading_stderr(command, timeout, false)
}

fn run_reading_stderr(mut command: Command, timeout: Duration, read_stderr: bool) -> Outcome {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    let group = child.id() as i32;
    let mut out = child.stdout.take().expect("piped stdout");
    // Without reading, the pipe is closed here, at once.
    let err = read_stderr.then_some(child.stderr.take().expect("piped stderr"));
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut err) = err {
            let _ = err.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if start.elapsed() > timeout {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let Some(status) = status else {
        kill_group(group);
        let _ = child.wait();
        let stdout = out_reader.join().unwrap_or_default();
        let stderr = err_reader.join().unwrap_or_default();
        panic!("{command:?} did not finish within {timeout:?}; killed its process group\n--- stdout\n{stdout}--- stderr\n{stderr}");
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let pids = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("pid "))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    let outcome = Outcome {
        status,
        stdout,
        stderr,
        pids,
        group,
    };
    check_nothing_left(&outcome);
    outcome
}

/// SIGKILLs `target` (a pid, or `-pgid` for a process group) with kill(1).
pub fn kill(target: i64) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &target.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn kill_group(group: i32) {
    kill(-i64::from(group));
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// `/dev/shm` entries of `pid` (the shm provider names them `PID:...`,
/// onesided's shared memory `onesided-PID-N`).
pub fn shm_files_of(pid: u32) -> Vec<String> {
    let prefixes = [format!("{pid}:"), format!("onesided-{pid}-")];
    shm_files()
        .into_iter()
        .filter(|n| prefixes.iter().any(|p| n.starts_with(p.as_str())))
        .collect()
}

/// Every entry of `/dev/shm`.
pub fn shm_files() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn check_nothing_left(outcome: &Outcome) {
    // Give the kernel a moment to finish tearing down killed processes.
    let deadline = Instant::now() + Duration::from_secs(5);
    while outcome.pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let alive: Vec<u32> = outcome.pids.iter().copied().filter(|&p| alive(p)).collect();
    for &pid in &alive {
        kill(i64::from(pid));
    }
    let files: Vec<String> = outcome.pids.iter().flat_map(|&p| shm_files_of(p)).collect();
    for f in &files {
        let _ = std::fs::remove_file(format!("/dev/shm/{f}"));
    }
    assert!(
        alive.is_empty(),
        "processes left running: {alive:?}\n{outcome}"
    );
    assert!(
        files.is_empty(),
        "files left in /dev/shm: {files:?}\n{outcome}"
    );
}

/// Debian's MPICH launcher (`mpiexec.hydra`), ranks waiting at most 20 s
/// for any one operation.
pub fn hydra() -> Command {
    let path = ["/usr/bin/mpiexec.hydra", "/usr/bin/mpiexec.mpich"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("MPICH's mpiexec.hydra is installed (Debian package mpich)");
    let mut command = Command::new(path);
    command.env("ONESIDED_TIMEOUT", "20");
    command
}

/// `srun --mpi=pmi2 -n N --overcommit` of a Slurm cluster that
/// `scripts/slurm.sh` started (it sets `ONESIDED_SLURM=1`), or `None`
/// when none was started.
pub fn srun(processes: u32) -> Option<Command> {
    if std::env::var_os("ONESIDED_SLURM").is_none_or(|v| v != "1") {
        return None;
    }
    let mut command = Command::new("srun");
    command
        .args(["--mpi=pmi2", "--overcommit", "--time=2"])
        .args(["-n", &processes.to_string()])
        .env("ONESIDED_TIMEOUT", "20");
    Some(command)
}

/// A command line for `osrun`.
pub struct Osrun {
    processes: u32,
    provider: String,
    fault_tolerant: bool,
    mpi: bool,
    standby: u32,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Osrun {
    /// `osrun -n N --provider P` running `program` of this workspace.
    pub fn new(processes: u32, provider: &str, program: &str) -> Osrun {
        Osrun {
            processes,
            provider: provider.into(),
            fault_tolerant: false,
            mpi: false,
            standby: 0,
            program: binary(program),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Adds `--standby COUNT`.
    pub fn standby(mut self, count: u32) -> Osrun {
        self.standby = count;
        self
    }

    /// Adds `--ft`.
    pub fn ft(mut self) -> Osrun {
        self.fault_tolerant = true;
        self
    }

    /// Adds `--mpi`: an MPI program of the standard ABI runs on onesided.
    pub fn mpi(mut self) -> Osrun {
        self.mpi = true;
        self
    }

    /// Adds an argument for the program.
    pub fn arg(mut self, arg: &str) -> Osrun {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments for the program.
    pub fn args(mut self, args: &[&str]) -> Osrun {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// With `yes`, makes every rank a host of its own
    /// (`ONESIDED_HOST=node{rank}`): the multi-host paths on one machine.
    pub fn host_per_rank(self, yes: bool) -> Osrun {
        match yes {
            true => self.env("ONESIDED_HOST", "node{rank}"),
            false => self,
        }
    }

    /// Sets an environment variable for osrun and the ranks.
    pub fn env(mut self, key: &str, value: &str) -> Osrun {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Runs it: osrun's own `--timeout` is 60 s, the harness's 90 s, and
    /// any one operation of a rank waits at most 20 s.
    pub fn run(self) -> Outcome {
        let mut command = Command::new(binary("osrun"));
        command
            .args(["-n", &self.processes.to_string()])
            .args(["--provider", &self.provider, "--timeout", "60"])
            .env("ONESIDED_TIMEOUT", "20");
        if self.fault_tolerant {
            command.arg("--ft");
        }
        if self.mpi {
            command.arg("--mpi");
        }
        if self.standby > 0 {
            command.args(["--standby", &self.standby.to_string()]);
        }
        command.arg(&self.program).args(&self.args).envs(self.env);
        run(command, Duration::from_secs(90))
    }
}

/// What the rank programs share: the data pattern and the way they fail
/// (a message naming the program, the rank and the check, exit code 1).
pub mod rank {
    /// Byte `i` of rank `rank`'s data.
    pub fn pattern(rank: u32, i: usize) -> u8 {
        (i.wrapping_mul(31).wrapping_add(rank as usize * 17 + 5) % 251) as u8
    }

    /// Fails the rank: `PROGRAM rank R: FAILED: what`, exit code 1.
    pub fn fail(rank: u32, what: &str) -> ! {
        let program = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_default();
        // One write: ranks share the pipe, and stderr is unbuffered (an
        // `eprintln!` writes piece by piece, which other ranks' lines
        // then split).
        let line = format!("{program} rank {rank}: FAILED: {what}\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
        std::process::exit(1)
    }

    /// Fails the rank with `what()` unless `ok`.
    pub fn check(rank: u32, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            fail(rank, &what());
        }
    }

    /// Waits for an empty message with `tag` from `from`, then SIGKILLs
    /// this process (a rank dying mid-job, for the failure tests).
    pub fn die_when_told(rank: u32, ep: &onesided_fabric::Endpoint, from: u32, tag: u64) -> ! {
        must(rank, "go", ep.recv(Some(from), tag, &mut []));
        println!("rank {rank}: killing myself");
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &std::process::id().to_string()])
            .status();
        std::thread::sleep(std::time::Duration::from_secs(30));
        fail(rank, "still alive after SIGKILL")
    }

    /// The value, or a failure naming `what` and the error.
    pub fn must<T, E: std::fmt::Display>(rank: u32, what: &str, r: Result<T, E>) -> T {
        r.unwrap_or_else(|e| fail(rank, &format!("{what}: {e}")))
    }
}
