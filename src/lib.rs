//! onesided: one-sided communication over libfabric, for parallel
//! programs that want remote memory access without MPI's costs.
//!
//! - [`World`]: this process's place in the job (started by `osrun`,
//!   MPICH's `mpiexec` or Slurm's `srun --mpi=pmi2`, through PMI-1; a
//!   singleton otherwise).
//! - [`Rma`], [`Exposure`], [`Window`], [`Epoch`]: windows that cost no
//!   message to create, passive-target ([`Locked`]) and fence ([`Fenced`])
//!   epochs whose guards carry the accesses (`get`, `put`, `rget`, `rput`,
//!   atomics) and end by being consumed.
//! - [`Comm`]: collectives over a [`Group`], blocking and nonblocking,
//!   each call's algorithm chosen from a measured profile.
//! - [`Request`]: one trait for RMA requests, barriers and nonblocking
//!   collectives, with [`wait_all`], [`wait_any`] and [`test_all`] over
//!   mixed sets.
//! - [`mam`]: redistribution of registered data for malleable jobs (jobs
//!   whose process count changes at checkpoints).
//! - [`reduce`]: a master/worker reduction that pairs partial results as
//!   processes become ready and recovers from a failed worker.
//! - [`Error`]: one error type; each layer's error converts into it whole.
//!
//! Every handle ([`World`], [`Rma`], [`Exposure`], [`Window`], [`Comm`]) is
//! owned: a struct can hold it, nothing needs dropping in a particular
//! order, and it is `Send`, so a helper thread can be given handles of
//! its own (the level MPI calls `MPI_THREAD_MULTIPLE`). Objects over one
//! group are created in the same order on every member; a thread that
//! creates its own beside another's uses [`Group::tagged`].
//!
//! Read a neighbour's value under `lock_all` and sum the values with an
//! allreduce (run it with `osrun -n 4 PROGRAM`):
//!
//! ```no_run
//! use onesided::prelude::*;
//!
//! fn main() -> Result<(), onesided::Error> {
//!     let world = World::init()?;
//!     let (me, n) = (world.rank(), world.size());
//!     let group = Group::world(n);
//!     let rma = Rma::new(world.endpoint())?;
//!     let window = rma.allocate(&group, 8, RemoteAccess::ReadOnly)?;
//!     window.write_local(0, &[u64::from(me) * 10])?;
//!     rma.ibarrier(&group)?.wait()?;
//!     let epoch = window.lock_all(Assert::empty())?;
//!     let mut theirs = [0u64];
//!     epoch.get((me + 1) % n, 0, &mut theirs)?;
//!     epoch.unlock()?;
//!     let comm = Comm::new(&rma, group)?;
//!     let mut sum = [0u64];
//!     comm.allreduce(&theirs, &mut sum, Op::SUM)?;
//!     println!("rank {me}: neighbour {}, sum {}", theirs[0], sum[0]);
//!     drop((window, comm, rma));
//!     Ok(world.finalize()?)
//! }
//! ```
//!
//! The layers stay reachable for what the facade does not re-export:
//! [`fabric`] (endpoint, memory registration, PMI, the launcher),
//! [`rma`] and [`collectives`] (profiles, algorithms, the pure protocol
//! cores).
//!
//! Dependencies: the three layers, and `thiserror` for [`Error`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;

pub use error::Error;
pub use onesided_collectives as collectives;
pub use onesided_collectives::{Buffers, Comm, Op, Reducible, Run};
pub use onesided_fabric as fabric;
pub use onesided_fabric::World;
pub use onesided_mam as mam;
pub use onesided_reduce as reduce;
pub use onesided_rma as rma;
pub use onesided_rma::{
    test_all, wait_all, wait_any, Assert, Barrier, Element, Epoch, EpochKind, Exposure, Fenced,
    Group, LockKind, Locked, Owned, RemoteAccess, Request, Rget, Rma, Rput, Window,
};

/// `Result` with onesided's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The names most programs use: `use onesided::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Assert, Comm, Epoch, Exposure, Group, LockKind, Op, RemoteAccess, Request, Rma, Window,
        World,
    };
}
