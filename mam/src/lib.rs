//! onesided-mam: data redistribution for malleable jobs
//! (docs/spec/malleable-redistribution.md), in the model of MaM.
//!
//! - [`Mam`]: the engine of one process. Data is registered as typed
//!   handles ([`Data`]): block-distributed or replicated arrays of any
//!   `bytemuck::Pod` type, constant or variable. [`Mam::reconfigure`]
//!   asks for a new process count, method and strategy ([`Config`], from
//!   code or `ONESIDED_MAM_*`), and [`Mam::checkpoint`] runs it: every
//!   process checks that all registered the same data, the data moves
//!   from the NS sources to the NT targets, and each process comes out
//!   with its new blocks and group ([`Status::Completed`]) or retired
//!   ([`Status::Retired`]).
//! - Methods: `Col` (an alltoallv of onesided-collectives over the group)
//!   and `RmaLock` / `RmaLockAll` (targets get from the sources'
//!   exposures, a lock per source or one `lock_all`; sources take no
//!   part). The data is exposed when registered and again by each target
//!   after a reconfiguration, so a redistribution's windows cost no
//!   message (the study's RMA methods paid a blocking `MPI_Win_create`);
//!   a growth opens the sources' exposures to the grown group without a
//!   copy (`Rma::regroup`), and a `Col` growth exposes nothing until it
//!   ends. A process that is both source and target copies the part it
//!   keeps; a blocking RMA move (which reads the exposures, not the
//!   columns) takes its column from the application instead, resizes it
//!   in place and moves that part within it: rank 0's new block starts
//!   where its old one did, so it neither faults in nor copies what it
//!   keeps. Should the move fail, the column is given back as it was.
//! - [`block`]: the block distribution and the spec's Algorithm 1 on
//!   `u64` counts, pure and tested exhaustively.
//!
//! - Growing: [`Mam::checkpoint`] spawns the processes the job lacks
//!   through the launcher that started it (`osrun`, Hydra's `mpiexec`,
//!   Slurm's `srun`), which join the job without re-initialising anyone
//!   (`onesided_fabric::World::spawn`); they run [`Mam::init`], register
//!   their data as the others (empty blocks) and receive it. Shrinking:
//!   retired processes get [`Status::Retired`], leave
//!   (`World::leave`) and exit 0 while the job goes on.
//! - Strategies: `Blocking`; `NonBlocking` and `WaitTargets` with the RMA
//!   methods get (and copy what a process keeps) slice by slice at
//!   checkpoints (no thread); with `Col`, `NonBlocking` runs the
//!   alltoallv in rounds of 64 KiB per pair, an `ialltoallv` each, one
//!   at a time, and `WaitTargets` one `ialltoallv` per array, all started
//!   at the first checkpoint (as the study's). `WaitTargets` ends with a nonblocking barrier
//!   tested at checkpoints, so the last target's checkpoint sees
//!   completion in the same iteration; `Thread` runs the move in a helper
//!   thread. Like MaM, RMA with `NonBlocking` needs no barrier for
//!   safety: the variable data's move and a closing barrier end every
//!   reconfiguration before any source releases its memory.
//! - `WaitTargets` is not paced: every process moves flat out at its
//!   checkpoints (RMA: every get at once), as the study's targets make
//!   blocking reads, so the move ends within an iteration or two (N_it)
//!   and those iterations take its time (omega above 1 where the cores
//!   are busy). `NonBlocking` and `Thread` are paced instead: the choice
//!   between finishing soon and not disturbing is the application's.
//! - Pacing (the application keeps its cores: omega near 1): a checkpoint
//!   moves as many bytes as fit a sixteenth of the time since the
//!   previous one at the rate seen so far (timed in the thread's CPU
//!   time). Where the processes here outnumber the CPUs, every wake-up
//!   among them costs a context switch, so all their moves together take
//!   half a sixteenth: CPUs over processes of it each, or, where processes
//!   a growth spawned wait among sources that keep every CPU busy, an
//!   equal part for the sources (in step) and for each new process (each
//!   delays the whole job in turn). A source that waits for the end moves
//!   flat out (its application has stopped) and raises its helper thread
//!   to full speed; so does a new process where every process has a CPU,
//!   else it takes its part (the sources may still iterate), waking every
//!   4 ms. A helper thread moves 256 KiB slices (an alltoallv in
//!   rounds for `Col`) flat out when the processes here and their helpers
//!   have a CPU each, else takes a sixteenth over the processes here
//!   (half that where the processes alone outnumber the CPUs; helpers
//!   wake apart, and each delays the whole bulk-synchronous job) and waits
//!   without spinning or yielding
//!   (`onesided_fabric::progress::wait_quietly`).
//!   MaM's helper threads poll, and made iterations several times longer
//!   on these machines (figures: docs/measurements.md, "MaM's polling
//!   helper threads").
//! - Agreement: in the background, every source's checkpoint takes part
//!   in a one-byte allreduce over the sources (as MaM's do), so that all
//!   see the end at the same checkpoint and an application whose
//!   iterations hold collectives stays in step.
//! - Parting: survivors wait for each retired process's goodbye
//!   (`World::leave`, sent once it needs nothing more) before they count
//!   it out, at their next checkpoint or when the engine is dropped (a
//!   retired process first waits for the survivors to drop what they
//!   hold over the old group, such as the application's Comm, which they
//!   do after the checkpoint that completed). Counting it out at once let a survivor finish and close its
//!   endpoint while its last message to the retired process was still on
//!   its way over tcp: the retired process then waited for it forever
//!   (about one run in twenty with a host per rank).
//!
//! Dependencies: `bytemuck` (registered data is any `Pod` type, moved as
//! bytes), `thiserror` (the error type), and the layers below.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod block;
pub mod config;
mod data;
mod engine;
mod error;
mod moving;

pub use config::{Config, Method, Strategy};
pub use data::{Data, Layout, Moves};
pub use engine::{LastTimes, Mam, Phase, Role, Status, Times, Wait};
pub use error::Error;
