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
//!   for a bad file.
//!
//! Still to come (issue 4): the collectives themselves (barrier, bcast,
//! reduce, allreduce, gather(v), scatter(v), allgather(v), alltoall(v),
//! reduce_scatter; several algorithms each, blocking and nonblocking),
//! `onesided-tune`, and the `collectives` benchmark suite.

#![warn(missing_docs)]

mod error;
pub mod op;
pub mod profile;
pub mod select;

pub use error::Error;
pub use op::{Builtin, Op, Reducible};
pub use profile::{Collective, Geometry, Profile, ProfileError};
pub use select::Selector;
