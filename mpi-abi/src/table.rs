//! Handles this library makes, by kind: a table from handle values to
//! objects. Values start above every predefined handle of the standard
//! ABI (which stay below 0x400) and are never reused within a process,
//! so a freed handle used again is an invalid handle, not another object.

use onesided::fabric::fnv::FastMap;

use crate::abi::Handle;

/// The first value a table hands out.
const FIRST: Handle = 0x1_0000;

/// Objects of one kind by handle.
pub(crate) struct Table<T> {
    items: FastMap<Handle, T>,
    next: Handle,
}

impl<T> Default for Table<T> {
    fn default() -> Table<T> {
        Table {
            items: FastMap::default(),
            next: FIRST,
        }
    }
}

impl<T> Table<T> {
    /// Keeps `item` under a predefined `handle`.
    pub(crate) fn predefine(&mut self, handle: Handle, item: T) {
        self.items.insert(handle, item);
    }

    /// Keeps `item` under a new handle.
    pub(crate) fn insert(&mut self, item: T) -> Handle {
        let handle = self.next;
        self.next += 8;
        self.items.insert(handle, item);
        handle
    }

    pub(crate) fn get(&self, handle: Handle) -> Option<&T> {
        self.items.get(&handle)
    }

    pub(crate) fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        self.items.get_mut(&handle)
    }

    /// Puts back under `handle` an object taken out by
    /// [`Table::remove`] (a request tested and not done).
    pub(crate) fn restore(&mut self, handle: Handle, item: T) {
        self.items.insert(handle, item);
    }

    /// Removes the object of a handle this table made (predefined ones
    /// stay).
    pub(crate) fn remove(&mut self, handle: Handle) -> Option<T> {
        match handle >= FIRST {
            true => self.items.remove(&handle),
            false => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_never_reused_and_predefined_ones_stay() {
        let mut t = Table::default();
        t.predefine(0x101, "world");
        let a = t.insert("a");
        assert!(a >= FIRST);
        assert_eq!(t.remove(a), Some("a"));
        let b = t.insert("b");
        assert_ne!(a, b);
        assert_eq!(t.get(a), None);
        assert_eq!(t.remove(0x101), None);
        assert_eq!(t.get(0x101), Some(&"world"));
    }
}
