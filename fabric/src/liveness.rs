//! Whether a peer's process on this machine has ended, known without a
//! message: a pidfd per peer, polled before an operation is posted to it
//! (once [`crate::Ranks::watch_processes`] asks for it).
//!
//! Why: libfabric 1.17's `shm` provider takes the target's region lock to
//! post, and the target takes it while it polls and serves what arrived.
//! A process killed inside that section leaves the lock held, and the
//! next post to it spins forever, with the endpoint's lock held. A
//! launcher's death notice (`osrun --ft`) arrives milliseconds later, too
//! late for a post made meanwhile; a check of the process narrows the
//! window to the microseconds between the check and the post. A stopped
//! process (SIGSTOP) is alive: a post to it may wait until it runs again.
//! What no check of the target can see: a process killed while it posted
//! to a live peer leaves *that peer's* lock held (docs/measurements.md,
//! "A rank killed inside the shm provider"); hence `osrun --ft` runs the
//! ranks over tcp.
//!
//! A process is known by its machine, pid namespace, pid and start time
//! ([`Process`], published by each rank at start-up). Only peers on this
//! machine in this pid namespace are watched; a pid that no longer exists,
//! or that now names a process started at another time, has ended.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A process's identity, as its peers learn it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    /// Its machine ([`crate::world::machine_id`]).
    pub machine: u64,
    /// Its pid namespace (the inode of `/proc/self/ns/pid`).
    pub namespace: u64,
    /// Its pid in that namespace.
    pub pid: u32,
    /// When it started, in clock ticks after boot (`/proc/PID/stat`).
    pub start: u64,
}

impl Process {
    /// This process; `None` where `/proc` does not tell.
    pub fn current() -> Option<Process> {
        let pid = std::process::id();
        let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
        Some(Process {
            machine: crate::world::machine_id(),
            namespace: parse_namespace(link.to_str()?)?,
            pid,
            start: start_time(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?,
        })
    }

    /// `MACHINE.NAMESPACE.PID.START` (the machine in hex): no `:` or
    /// blank, so it fits in the colon-separated texts ranks publish.
    pub fn encode(&self) -> String {
        format!(
            "{:016x}.{}.{}.{}",
            self.machine, self.namespace, self.pid, self.start
        )
    }

    /// Parses [`Process::encode`]'s text; `None` when malformed.
    pub fn parse(text: &str) -> Option<Process> {
        let mut fields = text.split('.');
        let process = Process {
            machine: u64::from_str_radix(fields.next()?, 16).ok()?,
            namespace: fields.next()?.parse().ok()?,
            pid: fields.next()?.parse().ok()?,
            start: fields.next()?.parse().ok()?,
        };
        fields.next().is_none().then_some(process)
    }
}

/// The namespace number of a `/proc/PID/ns/pid` link, `pid:[4026531836]`.
fn parse_namespace(link: &str) -> Option<u64> {
    link.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// The start time (field 22) of a `/proc/PID/stat` line. The command
/// (field 2) is in parentheses and may hold blanks and parentheses, so
/// fields are counted after its last `)`.
fn start_time(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // Field 3 (the state) is the first after the command.
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// What this process knows of one peer's process.
#[derive(Debug, Default)]
struct Peer {
    identity: Option<Process>,
    watch: Watch,
}

/// Whether a peer's process is watched.
#[derive(Debug, Default)]
enum Watch {
    /// Not looked at yet.
    #[default]
    Unopened,
    /// Not on this machine, or not in this pid namespace, or unknown.
    Unwatched,
    /// Running when its pidfd was opened.
    Open(OwnedFd),
    /// Ended.
    Ended,
}

/// The peers' processes, by rank.
#[derive(Debug, Default)]
pub(crate) struct Processes {
    /// Whether posts check them ([`Processes::ended`]).
    watching: bool,
    /// This process's identity (see [`Processes::watch`]).
    own: Option<Process>,
    by_rank: Vec<Peer>,
}

impl Processes {
    /// Turns the checks on; `own` is this process's identity, which
    /// tells the peers that share its machine and pid namespace.
    pub(crate) fn watch(&mut self, own: Option<Process>) {
        self.watching = true;
        self.own = own;
    }

    /// Records the process of `rank`.
    pub(crate) fn set(&mut self, rank: u32, identity: Option<Process>) {
        let rank = rank as usize;
        if self.by_rank.len() <= rank {
            self.by_rank.resize_with(rank + 1, Peer::default);
        }
        self.by_rank[rank] = Peer {
            identity,
            watch: Watch::Unopened,
        };
    }

    /// The process of `rank`, when known.
    pub(crate) fn get(&self, rank: u32) -> Option<Process> {
        self.by_rank.get(rank as usize)?.identity
    }

    /// Whether `rank`'s process is known to have ended (always `false`
    /// until [`Processes::watch`]). One `poll` of its pidfd (figures:
    /// docs/measurements.md, "Checking a peer's process").
    #[inline]
    pub(crate) fn ended(&mut self, rank: u32) -> bool {
        self.watching && self.look(rank)
    }

    fn look(&mut self, rank: u32) -> bool {
        let own = self.own;
        let Some(peer) = self.by_rank.get_mut(rank as usize) else {
            return false;
        };
        if let Watch::Unopened = peer.watch {
            peer.watch = match (own, peer.identity) {
                (Some(own), Some(process))
                    if own.machine == process.machine && own.namespace == process.namespace =>
                {
                    open(&process)
                }
                _ => Watch::Unwatched,
            };
        }
        match &peer.watch {
            Watch::Open(fd) if has_ended(fd) => {
                peer.watch = Watch::Ended;
                true
            }
            Watch::Ended => true,
            _ => false,
        }
    }
}

/// A pidfd of `process` (of this machine and pid namespace), or
/// [`Watch::Ended`] when its pid is gone or names a later process.
fn open(process: &Process) -> Watch {
    // SAFETY: pidfd_open takes a pid and flags and returns a new
    // descriptor or -1; it touches no memory of this process.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, process.pid as libc::pid_t, 0) };
    if fd < 0 {
        return match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::ESRCH) => Watch::Ended,
            // An older kernel, or a refusal: not watched.
            _ => Watch::Unwatched,
        };
    }
    // SAFETY: fd is a descriptor just returned to this process alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    // The pidfd names whatever process had the pid when it was opened:
    // the peer, if that process started when the peer did.
    match std::fs::read_to_string(format!("/proc/{}/stat", process.pid)) {
        Ok(stat) if start_time(&stat) == Some(process.start) => Watch::Open(fd),
        Ok(_) => Watch::Ended,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Watch::Ended,
        Err(_) => Watch::Unwatched,
    }
}

/// Whether the process of pidfd `fd` has ended (it polls readable once
/// the process has exited, reaped or not).
fn has_ended(fd: &OwnedFd) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, a timeout of zero.
    let ready = unsafe { libc::poll(&mut poll, 1, 0) };
    ready > 0 && poll.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_round_trip_and_malformed_ones_are_refused() {
        let p = Process {
            machine: 0xdead_beef,
            namespace: 4026531836,
            pid: 4242,
            start: 123_456,
        };
        assert_eq!(p.encode(), "00000000deadbeef.4026531836.4242.123456");
        assert_eq!(Process::parse(&p.encode()), Some(p));
        for bad in ["", "1.2.3", "1.2.3.4.5", "x.2.3.4", "1.2.-3.4", "1:2.3.4"] {
            assert_eq!(Process::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_start_time_is_counted_after_the_command() {
        // A command with blanks and a parenthesis, as comm may be.
        let mut stat = String::from("77 (a b) c) S");
        for field in 4..=21 {
            stat.push_str(&format!(" {field}"));
        }
        stat.push_str(" 98765 0 0");
        assert_eq!(start_time(&stat), Some(98765));
        assert_eq!(start_time("77 (x) S 1 2"), None);
        assert_eq!(parse_namespace("pid:[4026531836]"), Some(4026531836));
        assert_eq!(parse_namespace("net:[1]"), None);
    }

    #[test]
    fn this_process_is_watched_alive_and_a_gone_pid_has_ended() {
        let me = Process::current().expect("/proc tells this process");
        let mut processes = Processes::default();
        processes.set(0, Some(me));
        // A pid this process saw start and end.
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let _ = child.wait_with_output();
        processes.set(1, Some(Process { pid, ..me }));
        // Another start time: the pid now names another process.
        processes.set(
            2,
            Some(Process {
                start: me.start + 1,
                ..me
            }),
        );
        // Another machine: not watched.
        processes.set(
            3,
            Some(Process {
                machine: !me.machine,
                pid,
                ..me
            }),
        );
        assert!(!processes.ended(1), "nothing is checked before watch()");
        processes.watch(Some(me));
        assert!(!processes.ended(0));
        assert!(processes.ended(1));
        assert!(processes.ended(2));
        assert!(!processes.ended(3));
        assert!(!processes.ended(9), "an unknown rank");
    }
}
