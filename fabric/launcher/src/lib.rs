//! `osrun`, onesided's launcher: starts N local processes and serves them
//! PMI-1 itself, so the same client code runs under `osrun`, Hydra and
//! Slurm.
//!
//! - [`args`]: the command line.
//! - [`server`]: the PMI-1 server as a pure state machine.
//! - [`job`]: processes, sockets and the event loop.
//! - [`janitor`]: the process that cleans up after a job whose `osrun` was
//!   killed.
//!
//! Decisions: each process gets its PMI connection as an inherited socket
//! (`PMI_FD`); `osrun` listens on no port, so only processes it started can
//! speak to it. Output is inherited, not relayed. The exit status is the
//! first non-zero status of a rank (128 + signal for a rank killed by a
//! signal), 124 when `--timeout` expires, else 0. Without `--ft` the first
//! rank to fail takes the whole job down; with `--ft` the others are told on
//! the pipe named by [`onesided_fabric::world::EVENT_FD_ENV`], barriers complete
//! among the survivors, and the job runs on. Under `--ft` the ranks use
//! tcp unless a provider is named: a rank killed inside libfabric 1.17's
//! shm provider can leave a lock of a live peer's region held, and every
//! later send to that peer spins on it (3 jobs in 150 under a disk load,
//! in docs/measurements.md; tcp keeps no state a dead process can hold).
//! On one host `osrun` sets
//! `FI_TCP_IFACE=lo` and `FI_SOCKETS_IFACE=lo` unless they are set. When a
//! process exits, the `shm` provider's files it left in `/dev/shm` are
//! removed. With `--standby K`, K processes of the job's program start
//! ahead of any spawn and wait in `World::init` (endpoint open, libfabric
//! started: 0.3 s of a core with Debian's 1.17) until a spawn of that
//! program with the job's arguments takes them (`cmd=onesided-assign`
//! gives each its rank); other spawns start new processes. Replacements
//! start 2 s after a spawn took some, not at once, so that their start
//! does not slow the growing job. Unused ones are dismissed (their PMI
//! connection closed: they close their endpoints and exit 0) when the
//! job's other processes have ended; their exit is never a failure of
//! the job. Ranks die with `osrun` (`PR_SET_PDEATHSIG`), however it ends;
//! on SIGTERM, SIGINT or SIGHUP it kills them itself, removes their files
//! and exits with 128 + the signal; killed by SIGKILL, it leaves the
//! removal to its janitor.

//!
//! A crate of its own so that the libraries stay free of a command-line
//! parser. Dependencies: `clap` (the command line), `libc` (signals,
//! process groups, the parent-death signal: the `unsafe` blocks here,
//! each with its `// SAFETY:` comment, stay under `fabric/` with the
//! other FFI).

#![warn(missing_docs)]

pub mod args;
pub mod janitor;
pub mod job;
pub mod server;
