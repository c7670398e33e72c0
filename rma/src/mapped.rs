//! Memory of a peer mapped here, lent or held: what the data path and
//! barriers read through, without moving a reference count on every
//! access where the mapping lives in a cache as long as the reader.

use std::sync::Arc;

use onesided_fabric::Mapping;

/// A mapping borrowed from a cache that outlives the access (a window's
/// part, a board of the job's ranks at the `Rma`'s start), or held (a
/// dynamic window's attachment, a board of a rank that joined later).
pub(crate) enum Mapped<'a> {
    /// Borrowed from a cache.
    Lent(&'a Mapping),
    /// Held for the access.
    Held(Arc<Mapping>),
}

impl std::ops::Deref for Mapped<'_> {
    type Target = Mapping;

    fn deref(&self) -> &Mapping {
        match self {
            Mapped::Lent(m) => m,
            Mapped::Held(m) => m,
        }
    }
}
