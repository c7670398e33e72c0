//! The I/O around [`crate::server::PmiServer`]: starting processes, reading
//! their PMI lines, watching them exit, and cleaning up after them.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Instant;

use crate::args::Options;
use crate::janitor::{self, Janitor};
use crate::server::{Action, ClientId, PmiServer, SpawnCommand};
use onesided_fabric::pmi::wire::{Message, WireError};
use onesided_fabric::pmi::{ASSIGN, STANDBY_ENV};
use onesided_fabric::world::EVENT_FD_ENV;

/// Exit status when `--timeout` expires.
pub const TIMEOUT_STATUS: i32 = 124;

/// What a started process is.
#[derive(Clone, Copy)]
enum Role {
    /// Rank `rank` of `size` in `group` (`spawned` by a running job).
    Rank {
        group: usize,
        rank: u32,
        size: u32,
        spawned: bool,
    },
    /// Started ahead of a spawn (`--standby`).
    Standby,
}

/// Signals that end the job: `osrun` kills its processes, removes what
/// they left in `/dev/shm` and exits with 128 + the signal (dying at once,
/// it would leave the files behind: its processes die with it, by
/// `PR_SET_PDEATHSIG`, but nobody cleans up after them).
const ENDING_SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

enum Event {
    Message(ClientId, Result<Option<Message>, WireError>),
    Exited(ClientId),
    /// `osrun` received one of [`ENDING_SIGNALS`].
    Signal(libc::c_int),
}

struct Process {
    label: String,
    group: usize,
    /// Started ahead for a spawn (`--standby`), not handed to one yet: in
    /// no group, and its exit is no failure of the job.
    standby: bool,
    pid: u32,
    /// Reaped by the main thread only, after the waiter thread reports the
    /// exit (without reaping): a pid is never signalled after it could be
    /// reused.
    child: std::process::Child,
    pmi: UnixStream,
    notices: Option<UnixStream>,
    exited: bool,
}

struct Job<'a> {
    options: &'a Options,
    program: PathBuf,
    server: PmiServer,
    processes: HashMap<ClientId, Process>,
    events: mpsc::Sender<Event>,
    first_failure: Option<i32>,
    ending: bool,
    /// Told every process's pid (`None` when it could not start).
    janitor: Option<Janitor>,
    /// When to start standby processes in place of those a spawn took.
    refill_at: Option<Instant>,
}

/// Prints `osrun: MESSAGE` on standard error. A standard error that is
/// gone (a pipe whose reader exited) is no reason to stop: `eprintln!`
/// would panic, and `osrun` would die without killing the job or removing
/// its files in `/dev/shm`.
fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "osrun: {message}");
}

/// Runs the job `options` describes; returns `osrun`'s exit status.
pub fn run(options: &Options) -> i32 {
    if let Err(e) = check_libfabric() {
        say(&e);
        return 1;
    }
    let program = match resolve_program(&options.program) {
        Ok(p) => p,
        Err(e) => {
            say(&e);
            return 127;
        }
    };
    let (sender, receiver) = mpsc::channel();
    if let Err(e) = watch_signals(sender.clone()) {
        say(&e);
        return 1;
    }
    let mut job = Job {
        options,
        program,
        server: {
            let universe = options.universe.unwrap_or(options.processes);
            let mut server = PmiServer::new(&std::process::id().to_string(), universe);
            if options.universe.is_some() {
                server.limit();
            }
            server
        },
        processes: HashMap::new(),
        events: sender,
        first_failure: None,
        ending: false,
        janitor: Janitor::start()
            .map_err(|e| {
                say(&format!(
                    "{e}: a SIGKILL of osrun would leave files in /dev/shm"
                ))
            })
            .ok(),
        refill_at: None,
    };
    let start = SpawnCommand {
        count: options.processes,
        program: options.program.clone(),
        args: options.args.clone(),
        preput: Vec::new(),
    };
    if let Err(e) = job.start_group(&[start], false) {
        say(&e);
        job.kill_all();
        job.drain(&receiver);
        return 1;
    }
    job.refill_standby();
    let deadline = options.timeout.and_then(|t| Instant::now().checked_add(t));
    while job.processes.values().any(|p| !p.exited && !p.standby) {
        let wake = match (deadline, job.refill_at) {
            (Some(d), Some(r)) => Some(d.min(r)),
            (d, r) => d.or(r),
        };
        let event = match wake {
            Some(w) => match receiver.recv_timeout(w.saturating_duration_since(Instant::now())) {
                Ok(e) => e,
                Err(mpsc::RecvTimeoutError::Timeout)
                    if job.refill_at.is_some_and(|r| r <= Instant::now()) =>
                {
                    job.refill_at = None;
                    job.refill_standby();
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if !job.ending {
                        say(&format!(
                            "the job did not finish within --timeout {:?}; killing it",
                            options.timeout.unwrap_or_default()
                        ));
                        job.first_failure.get_or_insert(TIMEOUT_STATUS);
                        job.kill_all();
                    }
                    match receiver.recv() {
                        Ok(e) => e,
                        Err(_) => break,
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            },
            None => match receiver.recv() {
                Ok(e) => e,
                Err(_) => break,
            },
        };
        job.handle(event);
    }
    job.dismiss_standby(&receiver);
    job.first_failure.unwrap_or(0)
}

/// How long after a spawn took standby processes new ones start: not at
/// once, so that their start (libfabric's, 0.3 s of a core here) does not
/// slow the job while the new processes join and its data moves.
const REFILL_DELAY: std::time::Duration = std::time::Duration::from_secs(2);

/// How long standby processes have to close their endpoints and exit once
/// dismissed, before they are killed.
const DISMISS_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl Job<'_> {
    fn handle(&mut self, event: Event) {
        match event {
            Event::Message(client, Ok(Some(message))) => {
                let actions = self.server.handle(client, &message);
                self.perform(actions);
            }
            // A lost connection is the process going away: handled when it
            // is reaped.
            Event::Message(_, Ok(None) | Err(WireError::Closed { .. } | WireError::Io(_))) => {}
            Event::Message(client, Err(e)) => {
                if let Some(p) = self.processes.get(&client) {
                    say(&format!("{} sent a bad PMI message: {e}", p.label));
                }
                let reply = Message::new("error")
                    .with("rc", -1)
                    .with("msg", "malformed_line");
                self.perform(vec![Action::Reply(client, reply)]);
            }
            Event::Exited(client) => self.exited(client),
            Event::Signal(signal) => {
                if !self.ending {
                    say(&format!("received signal {signal}; killing the job"));
                    self.first_failure.get_or_insert(128 + signal);
                    self.kill_all();
                }
            }
        }
    }

    fn perform(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Reply(client, message) => {
                    let Some(p) = self.processes.get_mut(&client) else {
                        continue;
                    };
                    let line = match message.format() {
                        Ok(line) => line,
                        Err(e) => {
                            say(&format!("cannot answer {}: {e}", p.label));
                            continue;
                        }
                    };
                    // A process that went away cannot be answered; its exit
                    // is handled when it is reaped.
                    let _ = p.pmi.write_all(line.as_bytes());
                }
                Action::Spawn { client, commands } => {
                    let result = self.start_group(&commands, true);
                    if let Err(e) = &result {
                        say(e);
                    }
                    let reply = self.server.spawn_done(client, result);
                    self.perform(vec![reply]);
                }
                Action::Abort {
                    client,
                    code,
                    message,
                } => {
                    let label = self
                        .processes
                        .get(&client)
                        .map(|p| p.label.clone())
                        .unwrap_or_default();
                    say(&format!(
                        "{label} called abort (exit code {code}): {message}; killing the job"
                    ));
                    self.first_failure
                        .get_or_insert(if code == 0 { 1 } else { code });
                    self.kill_all();
                }
            }
        }
    }

    /// Starts one group of processes (the job itself, or a spawn).
    fn start_group(&mut self, commands: &[SpawnCommand], spawned: bool) -> Result<(), String> {
        let size = commands
            .iter()
            .try_fold(0u32, |n, c| n.checked_add(c.count))
            .filter(|&n| n <= onesided_fabric::MAX_RANKS)
            .ok_or("too many processes requested")?;
        // Resolve every program before starting anything.
        let programs = commands
            .iter()
            .map(|c| {
                if spawned {
                    resolve_program(&c.program)
                } else {
                    Ok(self.program.clone())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let preput: Vec<(String, String)> =
            commands.iter().flat_map(|c| c.preput.clone()).collect();
        let group = self.server.add_group(size, &preput);
        let mut rank = 0;
        for (command, program) in commands.iter().zip(&programs) {
            let warm = command.args == self.options.args && same_file(program, &self.program);
            for _ in 0..command.count {
                let label = if group == 0 {
                    format!("rank {rank}")
                } else {
                    format!("rank {rank} of spawned group {group}")
                };
                if warm && self.assign_standby(group, rank, size, &label) {
                    rank += 1;
                    continue;
                }
                let role = Role::Rank {
                    group,
                    rank,
                    size,
                    spawned,
                };
                if let Err(e) = self.start_process(role, program, &command.args, label) {
                    // The group cannot be complete: end the members already
                    // started and let the rest of the job carry on.
                    for p in self
                        .processes
                        .values()
                        .filter(|p| p.group == group && !p.exited)
                    {
                        signal_kill(p);
                    }
                    let actions = self.server.shrink_group(group, size - rank);
                    self.perform(actions);
                    return Err(e);
                }
                rank += 1;
            }
        }
        if spawned && self.options.standby > 0 {
            self.refill_at = Instant::now().checked_add(REFILL_DELAY);
        }
        Ok(())
    }

    /// Hands a standby process to `group` as its `rank` of `size`; false
    /// when there is none.
    fn assign_standby(&mut self, group: usize, rank: u32, size: u32, label: &str) -> bool {
        let line = match Message::new(ASSIGN)
            .with("rank", rank)
            .with("size", size)
            .format()
        {
            Ok(line) => line,
            Err(_) => return false,
        };
        let ready = self
            .processes
            .iter_mut()
            .filter(|(_, p)| p.standby && !p.exited)
            .find_map(|(&client, p)| {
                p.pmi
                    .write_all(line.as_bytes())
                    .is_ok()
                    .then_some((client, p))
            });
        let Some((client, p)) = ready else {
            return false;
        };
        p.standby = false;
        p.group = group;
        p.label = label.to_string();
        self.server.add_client(client, group);
        true
    }

    /// Starts standby processes until `--standby` of them wait (none once
    /// the job is ending).
    fn refill_standby(&mut self) {
        let waiting = self
            .processes
            .values()
            .filter(|p| p.standby && !p.exited)
            .count();
        let wanted = self.options.standby as usize;
        for _ in waiting..wanted {
            if self.ending {
                return;
            }
            let program = self.program.clone();
            let args = self.options.args.clone();
            if let Err(e) =
                self.start_process(Role::Standby, &program, &args, "a standby process".into())
            {
                say(&format!("{e}; spawns start new processes instead"));
                return;
            }
        }
    }

    /// Ends the standby processes once the job is over: their PMI
    /// connections close, so they close their endpoints and exit 0;
    /// those still there after [`DISMISS_WAIT`] are killed.
    fn dismiss_standby(&mut self, receiver: &mpsc::Receiver<Event>) {
        for p in self.processes.values().filter(|p| p.standby && !p.exited) {
            let _ = p.pmi.shutdown(std::net::Shutdown::Both);
        }
        let deadline = Instant::now() + DISMISS_WAIT;
        while self.processes.values().any(|p| !p.exited) {
            let left = deadline.saturating_duration_since(Instant::now());
            match receiver.recv_timeout(left) {
                Ok(Event::Exited(client)) => self.exited(client),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.kill_all();
                    self.drain(receiver);
                    return;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn start_process(
        &mut self,
        role: Role,
        program: &Path,
        args: &[String],
        label: String,
    ) -> Result<(), String> {
        let client = self.processes.len();
        let (ours, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
        let notices = if self.options.fault_tolerant {
            Some(UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?)
        } else {
            None
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .env("PMI_FD", theirs.as_raw_fd().to_string())
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
            .env_remove(STANDBY_ENV);
        match role {
            Role::Rank {
                rank,
                size,
                spawned,
                ..
            } => {
                command
                    .env("PMI_RANK", rank.to_string())
                    .env("PMI_SIZE", size.to_string());
                if spawned {
                    command.env("PMI_SPAWNED", "1");
                }
            }
            Role::Standby => {
                command
                    .env(STANDBY_ENV, "1")
                    .env("PMI_SPAWNED", "1")
                    .env_remove("PMI_RANK")
                    .env_remove("PMI_SIZE");
            }
        }
        let named = ["ONESIDED_PROVIDER", "FI_PROVIDER"]
            .iter()
            .any(|v| std::env::var_os(v).is_some());
        if let Some(provider) = self.options.rank_provider(named) {
            command.env("ONESIDED_PROVIDER", provider.name());
        }
        if self.options.mpi {
            command.env("LD_LIBRARY_PATH", mpi_library_path()?);
        }
        for iface in ["FI_TCP_IFACE", "FI_SOCKETS_IFACE"] {
            if std::env::var_os(iface).is_none() {
                command.env(iface, "lo");
            }
        }
        inheritable(&theirs)?;
        if let Some((_, child_end)) = &notices {
            inheritable(child_end)?;
            command.env(EVENT_FD_ENV, child_end.as_raw_fd().to_string());
        } else {
            command.env_remove(EVENT_FD_ENV);
        }
        // SAFETY: the closure runs in the child between fork and exec and
        // only calls prctl(2), sigemptyset(3), sigaddset(3) and
        // pthread_sigmask(3), which are async-signal-safe. prctl makes the
        // kernel kill the rank if osrun dies (even by SIGKILL), so a job
        // never outlives its launcher; the rank takes the signals osrun
        // blocks (the mask survives exec).
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                let set = ending_signals();
                let rc = libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                if rc != 0 {
                    return Err(std::io::Error::from_raw_os_error(rc));
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        // The child has its ends now; ours close when these drop.
        drop(theirs);
        let notices = notices.map(|(ours, _theirs)| ours);
        let pid = child.id();
        if let Some(janitor) = &mut self.janitor {
            janitor.watch(pid);
        }
        let (group, standby) = match role {
            Role::Rank { group, .. } => {
                self.server.add_client(client, group);
                (group, false)
            }
            Role::Standby => (usize::MAX, true),
        };
        let reader = ours.try_clone().map_err(|e| format!("socket: {e}"))?;
        let events = self.events.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            loop {
                let message = Message::read_from(&mut reader);
                // A malformed line is answered with an error; only a closed
                // or broken connection ends the reader.
                let done = matches!(
                    message,
                    Ok(None) | Err(WireError::Closed { .. } | WireError::Io(_))
                );
                if events.send(Event::Message(client, message)).is_err() || done {
                    return;
                }
            }
        });
        let events = self.events.clone();
        std::thread::spawn(move || {
            wait_exit(pid);
            let _ = events.send(Event::Exited(client));
        });
        self.processes.insert(
            client,
            Process {
                label,
                group,
                standby,
                pid,
                child,
                pmi: ours,
                notices,
                exited: false,
            },
        );
        Ok(())
    }

    fn exited(&mut self, client: ClientId) {
        let Some(p) = self.processes.get_mut(&client) else {
            return;
        };
        let Ok(status) = p.child.wait() else {
            return;
        };
        p.exited = true;
        let group = p.group;
        let (label, pid) = (p.label.clone(), p.pid);
        janitor::remove_shm_leftovers(pid);
        if p.standby {
            if !status.success() && !self.ending {
                say(&format!("{label} (pid {pid}) ended: {status}"));
            }
            return;
        }
        let actions = self.server.remove_client(client);
        self.perform(actions);
        let code = match (status.code(), status.signal()) {
            (Some(0), _) => return,
            (Some(code), _) => {
                if !self.ending {
                    say(&format!("{label} (pid {pid}) exited with status {code}"));
                }
                code
            }
            (None, Some(signal)) => {
                if !self.ending {
                    say(&format!(
                        "{label} (pid {pid}) was killed by signal {signal}"
                    ));
                }
                128 + signal
            }
            (None, None) => 1,
        };
        if self.ending {
            return;
        }
        self.first_failure.get_or_insert(code);
        if self.options.fault_tolerant {
            let rank = label
                .strip_prefix("rank ")
                .and_then(|r| r.split(' ').next())
                .unwrap_or("?")
                .to_string();
            say(&format!("--ft: telling the survivors that {label} died"));
            // Ranks are numbered per group: tell the dead rank's group only.
            for p in self
                .processes
                .values_mut()
                .filter(|p| !p.exited && p.group == group)
            {
                if let Some(n) = p.notices.as_mut() {
                    let _ = writeln!(n, "dead {rank}");
                }
            }
        } else {
            say("killing the job");
            self.kill_all();
        }
    }

    fn kill_all(&mut self) {
        self.ending = true;
        for p in self.processes.values().filter(|p| !p.exited) {
            signal_kill(p);
        }
    }

    /// Waits for the processes started so far to be reaped.
    fn drain(&mut self, receiver: &mpsc::Receiver<Event>) {
        while self.processes.values().any(|p| !p.exited) {
            match receiver.recv() {
                Ok(Event::Exited(client)) => self.exited(client),
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
}

/// [`ENDING_SIGNALS`] as a set (async-signal-safe: called between fork
/// and exec too).
fn ending_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it before
    // sigaddset adds valid signal numbers to it.
    unsafe {
        let mut set = std::mem::zeroed::<libc::sigset_t>();
        libc::sigemptyset(&mut set);
        for signal in ENDING_SIGNALS {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks [`ENDING_SIGNALS`] in this thread (the threads it starts
/// inherit the mask; the processes it starts unblock them before `exec`)
/// and starts a thread that reports each
/// one as an [`Event::Signal`]. Called before any other thread starts, so
/// that no thread takes such a signal itself.
///
/// # Errors
/// The kernel refuses to block the signals.
fn watch_signals(events: mpsc::Sender<Event>) -> Result<(), String> {
    let set = ending_signals();
    // SAFETY: pthread_sigmask reads the initialised set; no old mask is
    // asked for.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(format!(
            "cannot block SIGTERM, SIGINT and SIGHUP: {}",
            std::io::Error::from_raw_os_error(rc)
        ));
    }
    std::thread::spawn(move || loop {
        let mut signal: libc::c_int = 0;
        // SAFETY: sigwait reads the initialised set (blocked in every
        // thread of osrun) and writes one c_int.
        if unsafe { libc::sigwait(&set, &mut signal) } == 0
            && events.send(Event::Signal(signal)).is_err()
        {
            return;
        }
    });
    Ok(())
}

/// SIGKILLs a process that has not been reaped yet.
fn signal_kill(p: &Process) {
    // SAFETY: kill(2) with a pid this osrun started and has not reaped (only
    // the main thread reaps, in `exited`, which marks the process exited
    // first), so the pid cannot have been reused.
    unsafe { libc::kill(p.pid as libc::pid_t, libc::SIGKILL) };
}

/// Blocks until process `pid` has exited, without reaping it.
fn wait_exit(pid: u32) {
    loop {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: waitid writes one siginfo_t into the zeroed buffer; WNOWAIT
        // leaves the child to be reaped by the main thread.
        let ret = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if ret == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// Whether `a` and `b` name the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Clears `FD_CLOEXEC` so the next child inherits the descriptor.
fn inheritable(stream: &UnixStream) -> Result<(), String> {
    // SAFETY: F_SETFD on a descriptor this function's caller owns.
    let ret = unsafe { libc::fcntl(stream.as_raw_fd(), libc::F_SETFD, 0) };
    if ret == -1 {
        return Err(format!("fcntl: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Finds `program` as the shell would: a path if it holds a `/`, else on
/// `PATH`; it must be an executable file.
fn resolve_program(program: &str) -> Result<PathBuf, String> {
    let executable = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| {
                m.is_file()
                    && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0
            })
            .unwrap_or(false)
    };
    if program.contains('/') {
        let path = PathBuf::from(program);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(format!("program {program:?} not found or not executable"))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| format!("program {program:?} not found on PATH"))
}

/// Checks that libfabric can be loaded, so a missing library gives one clear
/// line instead of N loader errors.
///
/// Loading it costs 0.2 s here: Debian's build pulls in PSM libraries whose
/// constructors calibrate a clock by sleeping. So the file the loader would
/// take (`LD_LIBRARY_PATH`, then the usual directories) is only checked to
/// be a shared object; `dlopen` decides when no such file is found (a
/// directory of `ld.so.conf`).
fn check_libfabric() -> Result<(), String> {
    const NAME: &str = "libfabric.so.1";
    const DIRS: [&str; 7] = [
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib64",
        "/usr/lib64",
        "/lib",
        "/usr/lib",
        "/usr/local/lib",
    ];
    let path = std::env::var_os("LD_LIBRARY_PATH");
    let found = (path.iter().flat_map(std::env::split_paths))
        .chain(DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(NAME))
        .find(|p| p.exists());
    match found {
        Some(lib) => shared_object(&lib).map_err(|why| {
            format!(
                "libfabric is not usable: {}: {why} (install it: apt-get install libfabric1)",
                lib.display()
            )
        }),
        None => loadable(NAME),
    }
}

/// Whether `lib` starts as an ELF file does.
fn shared_object(lib: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(lib)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map_err(|e| e.to_string())?;
    if magic != *b"\x7fELF" {
        return Err("not a shared object".into());
    }
    Ok(())
}

/// Whether `dlopen` loads `name` (and unloads it at once).
fn loadable(name: &str) -> Result<(), String> {
    let c_name = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: dlopen with a valid C string; the handle is closed at once.
    let handle = unsafe { libc::dlopen(c_name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if handle.is_null() {
        // SAFETY: dlerror returns a thread-local C string or null.
        let why = unsafe {
            let e = libc::dlerror();
            if e.is_null() {
                "unknown error".to_string()
            } else {
                std::ffi::CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        return Err(format!(
            "libfabric is not usable: {why} (install it: apt-get install libfabric1)"
        ));
    }
    // SAFETY: handle came from dlopen above and is closed once.
    unsafe { libc::dlclose(handle) };
    Ok(())
}

/// `LD_LIBRARY_PATH` with osrun's directory first (`--mpi`): the build
/// leaves `libmpi_abi.so.1` beside osrun.
fn mpi_library_path() -> Result<std::ffi::OsString, String> {
    let exe = std::env::current_exe().map_err(|e| format!("--mpi: osrun's path: {e}"))?;
    let dir = exe.parent().ok_or("--mpi: osrun has no directory")?;
    if !dir.join("libmpi_abi.so.1").exists() {
        return Err(format!(
            "--mpi: no libmpi_abi.so.1 in {} (build the workspace first)",
            dir.display()
        ));
    }
    let mut paths = vec![dir.to_path_buf()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).map_err(|e| format!("--mpi: {e}"))
}
