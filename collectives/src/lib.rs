//! onesided-collectives: native collectives and the choice of their
//! algorithms from a measured performance profile.
//!
//! - [`Comm`]: barrier, bcast, reduce, allreduce, gatherv, scatterv,
//!   allgatherv, alltoall, alltoallv and reduce_scatter over a group (made
//!   over the process's [`onesided_rma::Rma`], whose windows the one-sided
//!   and shared-memory algorithms use); nonblocking `ibarrier`, `ibcast`,
//!   `ireduce`, `iallreduce`, `iallgatherv`, `ialltoallv` returning a
//!   [`Run`] request (a handle of its own, which may go to another
//!   thread).
//!   Each call's algorithm comes from the profile loaded at creation
//!   (`ONESIDED_PROFILE`) where it measured the group's geometry, else
//!   from the cost model in p and n ([`cost`], fitted to the profile or
//!   built in), the same on every rank; an
//!   algorithm that fails when a call starts it is dropped and the next
//!   best completes the call; [`Comm::agree`] makes the ranks adopt what
//!   monitoring measured.
//! - [`run`]: the executor. Message schedules go over tagged messages,
//!   round by round; the `shared` algorithm (every member on one host)
//!   through shared memory, step by step, with large pieces copied once,
//!   straight out of the publisher's memory where the host allows
//!   cross-memory reads. Nonblocking runs own the buffers handed to them
//!   (given back by [`Run::into_buffers`], no copies) and advance on every call into their Comm (tests and waits of any of its
//!   requests, new calls, blocking calls' waits), so requests may be waited
//!   for in any order; a wait backs off (spin, yield, sleep) instead of
//!   spinning, afresh whenever the call moves on.
//! - [`op`]: reductions (sum, prod, min, max, band, bor, bxor on integer
//!   and float elements; user-defined ones, commutative or not).
//! - [`algorithm`]: the collectives and each one's algorithms as an enum
//!   ([`algorithm::Allreduce::Ring`], ...), which [`Comm::force`] takes
//!   and [`Comm::last_algorithm`] answers.
//! - [`profile`] and [`select`]: performance profiles in a documented,
//!   versioned text format; the geometry filter; log-log interpolation;
//!   monitoring; removal of failed algorithms; the per-call choice.
//! - [`schedule`] and [`schedule::algorithms`]: the message algorithms as data,
//!   checked in an in-memory simulator against serial references for 1 to
//!   7 ranks, uneven and zero counts, every built-in operation and a
//!   non-commutative one. The shared-memory steps and the one-sided
//!   alltoall(v) (RMA get from windows over copies of the inputs) are
//!   checked over the fabric by the integration tests.
//! - `onesided-tune` (a binary of onesided-bench, beside the other tools):
//!   measures every algorithm into a profile,
//!   and checks the tuned choices against the best algorithm.
//!
//! Progress between calls: like MPICH without an async progress thread, a
//! nonblocking collective's later steps move only while the process is
//! inside a call of its Comm (the endpoint's progress thread moves the
//! messages already posted). A program that computes for long between
//! tests delays its peers by that long, never deadlocks them.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod algorithm;
mod comm;
pub mod cost;
mod error;
pub mod op;
pub mod profile;
pub mod run;
pub mod schedule;
mod scratch;
pub mod select;
mod shared;

pub use algorithm::{Algorithm, Collective};
pub use comm::Comm;
pub use error::Error;
pub use op::{Builtin, Op, Reducible};
pub use profile::{Geometry, Profile, ProfileError};
pub use run::{Buffers, Run};
pub use select::Selector;

#[cfg(test)]
mod tests {
    /// Compiles only while a Comm can be given to another thread.
    #[test]
    fn a_comm_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<crate::Comm>();
    }
}
