//! onesided-reduce: the task-parallel, fault-tolerant master/worker
//! reduction of `docs/spec/distributed-reduction.md`.
//!
//! - [`Reducer`]: the engine of one process over a group (rank 0 is the
//!   master and a worker). [`Reducer::reduce`] takes this process's data,
//!   a [`ReducerBody`] (built in: [`Sum`], [`Min`], [`Max`]; or any
//!   commutative, associative operation on a `Pod` element) and an id,
//!   and returns a [`ReduceFuture`]: `is_done` polls, `get` waits, and it
//!   is a `std::future::Future` to `.await` (woken by the reducer's
//!   handlers); each says which rank failed and how when the reduction
//!   cannot finish. Many
//!   reductions run at once, told apart by id (rsmpi-style, the group is
//!   the reducer's, not the call's).
//! - Scheduling ([`schedule`], [`master`], pure and tested as event
//!   sequences): workers report their lines (partial results) to the
//!   master as they become ready; it pairs them in arrival order and
//!   gives the task to the root's line, else a recovered one, else the
//!   worker whose last task was faster. Data never passes through the
//!   master: the chosen worker reads its partner's line one-sidedly from
//!   a dynamic window made once per reducer. The master schedules inside
//!   the progress engine (its control service, which sends tasks through
//!   an outbox), so a master that computes still schedules. Each
//!   worker's side is pure too (`worker.rs`, its rounds, deferred work,
//!   replicas and outcomes, tested as event sequences); the reducer
//!   drives it with the threads, the window and the files.
//! - Durability: the reduce call returns once this process's data is
//!   where a survivor can read it: in its line, in a file on its own
//!   host ([`replica`]; `ONESIDED_REDUCE_DIR`, mode 0600; an unwritable or
//!   full disk is an error at the call; not synced: survivors of the host
//!   read it from the page cache), and, when the
//!   group spans hosts, in a replica synced on the next live member on
//!   another host ([`schedule::replica_holder`]; so that the data outlives
//!   its host). The reduction starts meanwhile: the line is contributed at
//!   once. The replica is read from a second registered copy of the data
//!   (a task writes a line in place), which also serves a replica made
//!   again later (its holder died); a holder that fetches the line for a
//!   task while it is still the original keeps that. The holder writes
//!   and syncs it by a writer thread at the lowest priority, and tells
//!   the master and the owner. On one host no
//!   replica is made: a live member reads a dead one's file. The study
//!   lost 1.57% of its reductions to workers killed after their data
//!   entered the reduction and before their replica was written; here
//!   every failure of a worker process other than the root after its call
//!   returned is recovered. What stays open is a worker dying inside its
//!   call before the master has its data, or a host failing with the
//!   replica's holder: the reduction fails, naming the rank. The root's
//!   data has no file: its death fails the reduction anyway. Every process
//!   removes the files of an ended reduction on its host (a dead
//!   process's too).
//! - Recovery: the spec's steps for its three failure points, plus lines
//!   that waited in the queue and replicas a dead member held (made again
//!   on the next live member). The root dying fails the reduction on
//!   every survivor, naming it; the master dying fails every reduction
//!   on every worker within the detection time, naming rank 0 (no new
//!   master takes over: the queue and counters live on the master).
//! - Detection ([`Config`], `ring`): the live members form a ring;
//!   each pings its successor every 100 ms and reports a predecessor
//!   silent for 1 s to the master (a live process starved of its core was
//!   silent for hundreds of milliseconds on these machines; shorter times
//!   come from the environment), which counts it failed and tells the
//!   workers. A process of the same host that has ended counts as failed
//!   at the next ping, within 100 ms, without a launcher (its pidfd,
//!   `Ranks::has_ended`); `osrun --ft` notices count at once. A
//!   failure can be injected at a chosen point ([`Point`]) for tests of
//!   the recovery.
//! - Cost in p: per process and period, one ping sent and one received;
//!   per reduction, O(1) messages at each worker (its contribution, its
//!   tasks, its replica: `Store`, `Stored`, `Replicated`) and O(p) in all
//!   at the master; a death costs the master p - 1 `Dead` notices.
//!
//! Memory: lines (registered) and working copies are pooled across
//! reductions, up to 16 of each, so a reduction of megabytes neither
//! registers nor faults in memory; the root's result is handed to its
//! future without a copy. Waiting calls (`reduce`, `get`) drive the
//! endpoint's progress, so control messages are handled as they come.
//!
//! Dependencies: `bytemuck` (elements as bytes, checked), `thiserror`
//! (the error enum), and the layers below.

#![forbid(unsafe_code)]

pub mod body;
mod buffer;
mod error;
mod future;
mod lines;
pub mod master;
pub mod message;
pub mod path;
mod reducer;
pub mod replica;
mod ring;
pub mod schedule;
mod worker;

pub use body::{Max, Min, ReducerBody, Sum};
pub use error::Error;
pub use future::ReduceFuture;
pub use reducer::{Config, Load, Point, Reducer};
