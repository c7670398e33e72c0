//! The one error type of onesided-rma.

/// Everything that can fail in onesided-rma.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A group that cannot be built.
    #[error("bad group: {0}")]
    BadGroup(String),
    /// A group rank outside the group.
    #[error("group rank {rank} does not exist (group size {size})")]
    NotInGroup {
        /// The group rank given.
        rank: u32,
        /// The group size.
        size: u32,
    },
    /// An access to a target outside any epoch that covers it.
    #[error("access to group rank {target} outside an epoch (lock it, lock_all, or fence first)")]
    NoEpoch {
        /// The target's group rank.
        target: u32,
    },
    /// An access outside the target's part of a window.
    #[error("{what}: bytes {offset}..{offset}+{len} of group rank {target} in window {window:#x} are outside its {size}-byte part (or any attachment)")]
    OutOfRange {
        /// The operation.
        what: &'static str,
        /// The target's group rank.
        target: u32,
        /// The window's number.
        window: u64,
        /// The first byte.
        offset: u64,
        /// Bytes accessed.
        len: u64,
        /// Bytes in the target's part (0 for a dynamic window).
        size: u64,
    },
    /// A lock on a target this process holds a lock on already.
    #[error("group rank {target} is locked already by this process")]
    AlreadyLocked {
        /// The target's group rank.
        target: u32,
    },
    /// An unlock of a target this process holds no lock on.
    #[error("unlock of group rank {target}, which this process has not locked")]
    NotLocked {
        /// The target's group rank.
        target: u32,
    },
    /// Epochs that cannot be combined (a lock inside lock_all, a fence
    /// inside a passive epoch, ...).
    #[error("epoch misuse: {0}")]
    EpochConflict(&'static str),
    /// A window or exposure that no longer exists (or never did) here.
    #[error("window {window:#x} does not exist here (freed, or never created)")]
    Gone {
        /// The window's (or exposure's) number.
        window: u64,
    },
    /// A request-based operation to a target failed; its request holds
    /// the error.
    #[error(
        "a request-based operation to group rank {target} failed (its request holds the error)"
    )]
    TransferFailed {
        /// The target's group rank.
        target: u32,
    },
    /// An assertion the call does not take.
    #[error("{call} does not take the assertion(s) {}", crate::assert::names(*given))]
    BadAssert {
        /// The call.
        call: &'static str,
        /// The assertions it does not take.
        given: crate::Assert,
    },
    /// An operation the call does not take (a product in an atomic, a
    /// user-defined operation in `accumulate`).
    #[error("{call} does not take operation {op} (atomics take SUM, MIN, MAX, REPLACE and NO_OP)")]
    UnsupportedOp {
        /// The call.
        call: &'static str,
        /// The operation given.
        op: String,
    },
    /// More than a window can hold (attachments of a dynamic window).
    #[error("{0}")]
    TooMany(&'static str),
    /// A request did not complete in time.
    #[error("request did not complete within {0:?}")]
    RequestTimeout(std::time::Duration),
    /// The fabric layer failed.
    #[error(transparent)]
    Fabric(#[from] onesided_fabric::Error),
}
