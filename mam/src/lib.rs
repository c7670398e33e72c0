//! onesided-mam: data redistribution for malleable jobs
//! (shared/spec/malleable-redistribution.md), in the model of MaM.
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
//!   message (the study's RMA methods paid a blocking `MPI_Win_create`).
//!   A process that is both source and target copies the part it keeps.
//! - [`block`]: the block distribution and the spec's Algorithm 1 on
//!   `u64` counts, pure and tested exhaustively.
//!
//! Built so far: shrinking (and keeping the size) with the blocking
//! strategy. Growing needs spawned processes to join the running job's
//! endpoint, and the background strategies need the reads in flight
//! between checkpoints; both are refused with a clear error until built.
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

pub use config::{Config, Method, Strategy};
pub use data::{Data, Layout, Moves};
pub use engine::{Mam, Phase, Role, Status, Times, Wait};
pub use error::Error;
