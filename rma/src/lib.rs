//! onesided-rma: remote memory access windows.
//!
//! - [`Rma`] / [`Exposure`] / [`Window`]: windows over a [`Group`] that
//!   cost no message to create (see the cost model in the [`window`]
//!   module), on-host peers reached through shared memory, others through
//!   the provider: `create` over exposed memory, `allocate`,
//!   `create_dynamic` with `attach`/`detach`; passive-target epochs as
//!   guards ([`Epoch`]), `fence`, `flush`; `get`/`put`/`rget`/`rput` on any
//!   `bytemuck::Pod` type, `accumulate`/`fetch_and_op`/`compare_and_swap`
//!   on [`Element`] types; `free`.
//! - [`Request`] ([`Rget`], [`Rput`], [`Barrier`] from `ibarrier`), with
//!   [`test_all`], [`wait_all`], [`wait_any`].
//! - The pure protocol core, tested without processes: [`lock`] (the lock
//!   word), [`epoch`] (which accesses are allowed),
//!   [`request::dissemination`], the arithmetic of atomics
//!   (`onesided_fabric::atomic`).
//!
//! Offsets are in bytes (there is no displacement unit). Misuse (an access
//! outside a part or an epoch, an unknown rank, unlock without lock, use
//! after free) is an error value naming the rank, the window and the range,
//! returned before anything is posted.

#![warn(missing_docs)]

mod barrier;
mod directory;
mod element;
pub mod epoch;
mod error;
mod group;
pub mod lock;
pub mod request;
mod transfer;
pub mod window;

pub use barrier::Barrier;
pub use element::{Element, Op};
pub use epoch::Epochs;
pub use error::Error;
pub use group::Group;
pub use lock::LockKind;
pub use request::{test_all, wait_all, wait_any, Request};
pub use transfer::{Rget, Rput};
pub use window::{
    Epoch, Exposure, Rma, Window, ATTACH_SHIFT, BARRIER_NOTICE, DESCRIBE, FREE_NOTICE,
};
