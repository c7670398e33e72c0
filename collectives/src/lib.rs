//! onesided-collectives: native collectives and the choice of their
//! algorithms (in progress).
//!
//! Built so far, pure and tested without processes:
//! - [`op`]: reductions (sum, prod, min, max, band, bor, bxor on integer
//!   and float elements; user-defined ones, commutative or not);
//! - [`profile`]: performance profiles in a documented, versioned text
//!   format; the geometry filter; log-log interpolation between measured
//!   sizes; monitoring updates; removal of failed algorithms;
//! - [`select`]: the per-call choice (profile, else built-in defaults by
//!   size), loaded from `ONESIDED_PROFILE` with one warning (file and line)
//!   for a bad file;
//! - [`schedule`]: algorithms as data (rounds of copies, sends, receives
//!   and combinations) and an in-memory simulator;
//! - [`algorithms`]: barrier (dissemination), bcast (binomial, linear,
//!   scatter+allgather), reduce (binomial, linear), allreduce (recursive
//!   doubling, ring), gather(v)/scatter(v) (linear), allgather(v) (ring,
//!   recursive doubling, Bruck), alltoall(v) (pairwise, linear),
//!   reduce_scatter (pairwise, ring): each correct for every group size
//!   and for uneven and zero counts (checked against serial references for
//!   1 to 7 ranks, every built-in operation and a non-commutative one).
//!
//! Still to come (issue 4): the executor running schedules over the fabric
//! (blocking, and nonblocking as requests advanced by the progress engine),
//! the remaining algorithms (Rabenseifner, reduce_scatter+gather, binomial
//! gather/scatter, the one-sided alltoallv), `onesided-tune`, and the
//! `collectives` benchmark suite.

#![warn(missing_docs)]

pub mod algorithms;
mod comm;
mod error;
pub mod op;
pub mod profile;
pub mod run;
pub mod schedule;
pub mod select;

pub use comm::Comm;
pub use error::Error;
pub use op::{Builtin, Op, Reducible};
pub use profile::{Collective, Geometry, Profile, ProfileError};
pub use run::Run;
pub use select::Selector;
