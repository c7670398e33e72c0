//! onesided-rma: remote memory access windows (in progress).
//!
//! This crate will hold windows that are cheap to create (`create`, `allocate`,
//! `create_dynamic`), with persistent registrations and remote descriptors cached
//! per peer, an on-node shared-memory fast path, passive-target epochs
//! (lock/lock_all/flush) and active-target `fence`, `put`/`get`/`rput`/`rget`
//! and atomics on `bytemuck::Pod` elements, requests and `ibarrier`.
//! See `shared/DESIGN.md`, section rma/.
//!
//! What is here so far is the pure protocol core, tested without processes:
//! - [`Group`]: ordered subsets of ranks, built without communication;
//! - [`lock`]: the passive-target lock protocol on a lock word (remote
//!   atomics decide; no message to the target);
//! - [`epoch`]: which accesses an origin may make, and the errors of misuse.

#![warn(missing_docs)]

pub mod epoch;
mod error;
mod group;
pub mod lock;

pub use epoch::Epochs;
pub use error::Error;
pub use group::Group;
pub use lock::LockKind;
