//! onesided-collectives: native collectives and the choice of their
//! algorithms (in progress).
//!
//! - [`Comm`]: barrier, bcast, reduce, allreduce, gatherv, scatterv,
//!   allgatherv, alltoall, alltoallv and reduce_scatter over a group;
//!   nonblocking `ibarrier`, `ibcast`, `ireduce`, `iallreduce`,
//!   `iallgatherv` returning a [`Run`] request. Each call's algorithm comes
//!   from the profile loaded at creation (`ONESIDED_PROFILE`) or built-in
//!   defaults, the same on every rank.
//! - [`run`]: the executor (schedules over tagged messages, round by round).
//! - [`op`]: reductions (sum, prod, min, max, band, bor, bxor on integer
//!   and float elements; user-defined ones, commutative or not).
//! - [`profile`] and [`select`]: performance profiles in a documented,
//!   versioned text format; the geometry filter; log-log interpolation;
//!   monitoring; removal of failed algorithms; the per-call choice.
//! - [`schedule`] and [`algorithms`]: every algorithm as data, checked in
//!   an in-memory simulator against serial references for 1 to 7 ranks,
//!   uneven and zero counts, every built-in operation and a
//!   non-commutative one.
//! - `onesided-tune` (binary): measures every algorithm into a profile.
//!
//! Limits today (issue 4 is in progress): a nonblocking collective
//! advances when it is tested (its first round is posted at once); wait on
//! several together (`onesided_rma::wait_all`) or in the same order on
//! every rank, since waiting on them in different orders can deadlock.
//! Messages go through the provider (no on-host shared-memory path yet).
//! Not built yet: the one-sided alltoallv, and agreement on monitored
//! updates.

#![warn(missing_docs)]

pub mod algorithms;
mod comm;
mod error;
pub mod op;
pub mod profile;
pub mod run;
pub mod schedule;
pub mod select;

pub use comm::{Comm, FAULT_ENV};
pub use error::Error;
pub use op::{Builtin, Op, Reducible};
pub use profile::{Collective, Geometry, Profile, ProfileError};
pub use run::Run;
pub use select::Selector;
