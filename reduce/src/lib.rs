//! onesided-reduce: the task-parallel, fault-tolerant master/worker
//! reduction of `docs/spec/distributed-reduction.md`.
//!
//! - [`Reducer`]: the engine of one process over a group (rank 0 is the
//!   master and a worker). [`Reducer::reduce`] takes this process's data,
//!   a [`ReducerBody`] (built in: [`Sum`], [`Min`], [`Max`]; or any
//!   commutative, associative operation on a `Pod` element) and an id,
//!   and returns a [`ReduceFuture`]: `is_done` polls, `get` waits, both
//!   say which rank failed and how when the reduction cannot finish. Many
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
//!   an outbox), so a master that computes still schedules.
//! - Durability: the reduce call returns once this process's data is in
//!   its line and, past the root, in a file on its own host's disk
//!   ([`replica`]; `ONESIDED_REDUCE_DIR`, mode 0600; an unwritable or
//!   full disk is an error at the call). The reduction starts while the
//!   file is written, which appears whole or not at all. From the call's
//!   return the data outlives the process: a dead worker's share is read
//!   back from its file by a live member on its host, even when its line
//!   never reached the master. The file is synced, and a replica written
//!   and synced on the next live member's disk (so that the data
//!   outlives the host), in the background by a writer thread at the
//!   lowest priority: the replica travels with the first fetch of the
//!   data when its holder is the fetcher, and counts (the master reloads
//!   from it) once synced. The study lost 1.57% of its reductions to
//!   workers killed after their data entered the reduction and before
//!   their replica was written; here the call returns only once the data
//!   is on its host's disk, so every failure of a worker process other
//!   than the root after its call returned is recovered. What stays open
//!   is a worker dying inside its call before its line was fetched, or a
//!   whole host failing before its workers' replicas are synced
//!   elsewhere: the reduction fails, naming the rank. The root's data has
//!   no file: its death fails the reduction anyway. Every process removes
//!   the files of an ended reduction on its host (a dead process's too).
//! - Recovery: the spec's steps for its three failure points, plus lines
//!   that waited in the queue and replicas a dead member held (made again
//!   on the next live member). The root dying fails the reduction on
//!   every survivor, naming it; the master dying fails every reduction
//!   on every worker within the detection time, naming rank 0 (no new
//!   master takes over: the queue and counters live on the master).
//! - Detection ([`Config`]): the master pings each worker every 100 ms
//!   and counts one silent for 1 s as failed, as do workers the master
//!   (a live process starved of its core was silent for hundreds of
//!   milliseconds on these machines; shorter times come from the
//!   environment). A process of the same host that has ended counts as
//!   failed at the next ping, within 100 ms, without a launcher (its
//!   pidfd, `Endpoint::has_ended`); `osrun --ft` notices count at once;
//!   the silence catches hung processes and other hosts'. Failures are
//!   broadcast to the workers. A failure can be
//!   injected at a chosen point ([`Point`]) for tests of the recovery.
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
mod error;
pub mod master;
pub mod message;
pub mod path;
mod reducer;
pub mod replica;
mod ring;
pub mod schedule;

pub use body::{Max, Min, ReducerBody, Sum};
pub use error::Error;
pub use reducer::{Config, Load, Point, ReduceFuture, Reducer};
