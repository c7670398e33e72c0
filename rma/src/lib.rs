//! onesided-rma: remote memory access windows.
//!
//! - [`Rma`] / [`Window`]: windows over a [`Group`] that cost no message to
//!   create (see the cost model in [`Window`]'s module docs), on-host peers
//!   reached through shared memory, others through the provider;
//!   passive-target epochs as guards ([`Epoch`]), `fence`, `get`/`put`,
//!   64-bit atomics, `free`;
//! - [`Request`] and [`Barrier`] (`ibarrier`), with [`test_all`],
//!   [`wait_all`], [`wait_any`];
//! - the pure protocol core, tested without processes: [`lock`] (the lock
//!   word), [`epoch`] (which accesses are allowed), [`request::dissemination`].
//!
//! Not built yet (see the foundation and RMA issues' notes): `create` over
//! caller memory, `create_dynamic`, `rput`/`rget`, typed `accumulate` and
//! `fetch_and_op` on `bytemuck::Pod` elements.

#![warn(missing_docs)]

pub mod epoch;
mod error;
mod group;
pub mod lock;
pub mod request;
mod window;

pub use epoch::Epochs;
pub use error::Error;
pub use group::Group;
pub use lock::LockKind;
pub use request::{test_all, wait_all, wait_any, Request};
pub use window::{Barrier, Epoch, Rma, Window, BARRIER_NOTICE, DESCRIBE, FREE_NOTICE};
