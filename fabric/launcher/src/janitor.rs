//! The janitor: what cleans up after a job whose `osrun` was killed.
//!
//! Ranks die with `osrun` however it ends (`PR_SET_PDEATHSIG`), but an
//! `osrun` killed by SIGKILL (a batch system's hard kill, the OOM killer)
//! cannot remove the files its ranks leave in `/dev/shm` (the `shm`
//! provider's and onesided's own). So `osrun` starts a janitor first: itself
//! again (`osrun --janitor`), in a session of its own (a signal to `osrun`'s
//! process group does not reach it) with no output, told on its standard
//! input the pid of every process of the job (`pid N` lines). When that
//! input closes (`osrun` has exited, however), the janitor waits until those
//! processes are gone (at most [`GONE_WITHIN`]) and removes what they left
//! in `/dev/shm`. Should the kernel hand a rank's pid to an unrelated
//! process between the rank's death and the sweep, that process's files
//! named after the pid would go too: a window of moments.

use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// The flag that makes `osrun` a janitor.
pub const JANITOR_FLAG: &str = "--janitor";

/// How long the janitor waits for the job's processes to be gone.
pub const GONE_WITHIN: Duration = Duration::from_secs(30);

/// `osrun`'s end of its janitor.
pub struct Janitor {
    /// Closed when `osrun` exits, which starts the sweep.
    input: ChildStdin,
    /// Kept so that the janitor is not reaped early; never waited for (it
    /// outlives `osrun`, and init reaps it).
    _child: Child,
}

impl Janitor {
    /// Starts the janitor (this program with [`JANITOR_FLAG`]).
    ///
    /// # Errors
    /// A message when this program's path is unknown or it cannot start.
    pub fn start() -> Result<Janitor, String> {
        let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
        let mut command = Command::new(exe);
        command
            .arg(JANITOR_FLAG)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: setsid(2) is async-signal-safe; the child leaves osrun's
        // session and process group, so a kill of that group spares it.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start the janitor: {e}"))?;
        let input = child.stdin.take().ok_or("the janitor has no input")?;
        Ok(Janitor {
            input,
            _child: child,
        })
    }

    /// Tells the janitor about process `pid` of the job.
    pub fn watch(&mut self, pid: u32) {
        // A janitor that is gone cleans nothing up; the job goes on.
        let _ = writeln!(self.input, "pid {pid}");
    }
}

/// The janitor's side: reads `pid N` lines until its input closes, then
/// sweeps up after those processes. Returns its exit status (0).
pub fn run() -> i32 {
    let pids: Vec<u32> = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| parse_pid_line(&line))
        .collect();
    let deadline = Instant::now() + GONE_WITHIN;
    let mut pause = Duration::from_millis(1);
    while pids.iter().any(|&p| exists(p)) && Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
    for &pid in &pids {
        if !exists(pid) {
            remove_shm_leftovers(pid);
        }
    }
    0
}

/// The pid of a `pid N` line; `None` for any other line.
fn parse_pid_line(line: &str) -> Option<u32> {
    line.trim().strip_prefix("pid ")?.trim().parse().ok()
}

/// Whether process `pid` still exists (a zombie counts).
fn exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() != libc::ESRCH }
}

/// Removes the files process `pid` left in `/dev/shm`: the `shm` provider's
/// (libfabric 1.17 names them `PID:DOMAIN:ENDPOINT`) and onesided's shared
/// memory (`onesided-PID-N`).
pub(crate) fn remove_shm_leftovers(pid: u32) {
    let Ok(entries) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    let prefixes = [format!("{pid}:"), format!("onesided-{pid}-")];
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if prefixes.iter().any(|p| name.starts_with(p.as_str())) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_lines_parse_and_others_are_ignored() {
        assert_eq!(parse_pid_line("pid 42\n"), Some(42));
        for other in ["", "pid", "pid x", "pid -1", "42", "pids 1"] {
            assert_eq!(parse_pid_line(other), None, "{other:?}");
        }
    }

    #[test]
    fn this_process_exists_and_a_reaped_child_does_not() {
        assert!(exists(std::process::id()));
        let mut child = Command::new("true").spawn().expect("start true");
        let pid = child.id();
        child.wait().expect("reap true");
        assert!(!exists(pid));
    }
}
