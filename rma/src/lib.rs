//! onesided-rma: remote memory access windows.
//!
//! - [`Rma`] / [`Exposure`] / [`Window`]: windows over a [`Group`] that
//!   cost no message to create (see the cost model in the [`window`]
//!   module), on-host peers reached through shared memory, others through
//!   the provider: `create` over exposed memory, `allocate`,
//!   `create_dynamic` with `attach`/`detach`; `free`.
//! - Epochs as guards ([`Epoch`]: `lock`, `lock_all`, `fence`, with
//!   [`Assert`] flags): the accesses are the guard's methods, so none
//!   compiles outside an epoch: `get`/`put`/`rget`/`rput` on any
//!   `bytemuck::Pod` type, `rget_owned`/`rput_owned` over a buffer the
//!   request owns (no copy), `accumulate`/`fetch_and_op`/`compare_and_swap`
//!   on [`Element`] types, `flush`.
//! - [`Request`] ([`Rget`], [`Rput`], [`Owned`], [`Barrier`] from
//!   `ibarrier`, and the collectives' requests), with [`test_all`],
//!   [`wait_all`], [`wait_any`]
//!   over sets of mixed requests (`&mut dyn Request`).
//! - The pure protocol core, tested without processes: [`lock`] (the lock
//!   word), [`epoch`] (which accesses are allowed),
//!   [`request::dissemination`], the arithmetic of atomics
//!   (`onesided_fabric::atomic`).
//!
//! Offsets are in bytes (there is no displacement unit). Misuse is an
//! error value returned before anything is posted: an access outside a
//! target's part names the target, the window and the range
//! ([`Error::OutOfRange`]); an unknown rank, an access to a target the
//! epoch does not cover and nested epochs name the rank or the conflict.
//! An access outside an epoch, unlock without lock, free inside an epoch
//! and use after free do not compile.
//!
//! Handles, not borrows: [`Rma`], [`Exposure`] and [`Window`] own what
//! they use (the endpoint, the registry, the memory) and may be kept in
//! structs and moved to other threads; whatever is dropped last releases
//! it. Objects over one group are numbered in creation order, so every
//! member creates them in the same order: a thread creating its own
//! beside another's uses a group of its own ([`Group::tagged`]). One
//! [`Rma`] per endpoint for the life of the process (clone it for more
//! handles): the numbering lives on the endpoint's board.
//!
//! Dependencies: `thiserror` (the error enum), `bytemuck` (typed access
//! to bytes), `bitflags` (the assertions).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod assert;
mod barrier;
mod directory;
mod element;
pub mod epoch;
mod error;
mod group;
pub mod lock;
mod mapped;
pub mod op;
mod relay;
pub mod request;
mod transfer;
pub mod window;

pub use assert::Assert;
pub use barrier::Barrier;
pub use element::Element;
pub use epoch::Epochs;
pub use error::Error;
pub use group::Group;
pub use lock::LockKind;
pub use op::{Builtin, Op, UserFn};
pub use request::{test_all, wait_all, wait_any, ErrInto, Request};
pub use transfer::{Owned, Rget, Rput};
pub use window::{Epoch, EpochKind, Exposure, Fenced, Locked, RemoteAccess, Rma, Window};

/// `m` locked. A panic while it was held leaves plain data (maps, lists,
/// a transfer's state) that is still consistent, so the poison is ignored.
pub(crate) fn lock_state<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

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
