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
//! Offsets are in bytes (there is no displacement unit). Misuse is an
//! error value returned before anything is posted: an access outside a
//! target's part names the target, the window and the range
//! ([`Error::OutOfRange`]); an unknown rank, an access outside an epoch and
//! nested epochs name the rank or the conflict. Unlock without lock, free
//! inside an epoch and use after free do not compile: an [`Epoch`] is a
//! guard borrowing its window, and `free` consumes the window.
//!
//! One [`Rma`] per endpoint for the life of the process (windows and
//! barriers are numbered per group, on the endpoint's board).

#![forbid(unsafe_code)]
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
pub use window::{Epoch, Exposure, FastMap, Fnv, Rma, Window};

#[cfg(test)]
mod tests {
    /// Compiles only while the handles can be given to other threads.
    #[test]
    fn handles_can_move_to_other_threads() {
        fn send<T: Send>() {}
        fn shared<T: Send + Sync>() {}
        shared::<crate::Rma>();
        shared::<crate::Exposure>();
        send::<crate::Window>();
        send::<crate::Barrier>();
        shared::<onesided_fabric::Endpoint>();
    }
}
