//! A process's directory: the descriptions of its exposures in a small
//! shared-memory table that processes on the same host read instead of
//! asking (a load instead of a control-plane round trip).
//!
//! 16 KiB: 64 slots of 256 bytes, each `[id: u64][len: u64][description]`.
//! The owner writes a slot's bytes while its id word is 0, then stores the
//! id (release); a reader loads the id (acquire), copies the bytes and
//! checks the id again, so it never takes a half-written or reused slot for
//! the one it wants. Exposure `id` lives in one of the [`PROBE`] slots from
//! `id % SLOTS`; when they are all taken it is not published and readers
//! ask its owner instead.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use onesided_fabric::Mapping;

use crate::Error;

const SLOTS: usize = 64;
const SLOT: usize = 256;
/// Slots tried for one id.
const PROBE: usize = 8;
/// Description bytes a slot holds.
const PAYLOAD: usize = SLOT - 16;

/// This process's directory (the writing side).
pub(crate) struct Directory {
    map: Mapping,
    used: RefCell<HashMap<u64, usize>>,
}

fn slots(id: u64) -> impl Iterator<Item = usize> {
    (0..PROBE).map(move |i| (id as usize).wrapping_add(i) % SLOTS)
}

impl Directory {
    /// A new, empty directory in named shared memory.
    pub(crate) fn new() -> Result<Directory, Error> {
        Ok(Directory {
            map: Mapping::create_shared(SLOTS * SLOT)?,
            used: RefCell::default(),
        })
    }

    /// The name peers on this host map it by.
    pub(crate) fn name(&self) -> &str {
        self.map.name().unwrap_or_default()
    }

    /// Publishes `description` of `id`; whether there was room.
    pub(crate) fn publish(&self, id: u64, description: &[u8]) -> bool {
        if id == 0 || description.len() > PAYLOAD {
            return false;
        }
        let mut used = self.used.borrow_mut();
        let taken: Vec<usize> = used.values().copied().collect();
        let Some(slot) = slots(id).find(|s| !taken.contains(s)) else {
            return false;
        };
        let at = slot * SLOT;
        let written = self
            .map
            .write_bytes(at + 8, &(description.len() as u64).to_le_bytes())
            .and_then(|()| self.map.write_bytes(at + 16, description))
            .and_then(|()| self.map.atomic_u64(at))
            .map(|word| word.store(id, Ordering::Release));
        if written.is_ok() {
            used.insert(id, slot);
        }
        written.is_ok()
    }

    /// Withdraws `id` (if published).
    pub(crate) fn withdraw(&self, id: u64) {
        if let Some(slot) = self.used.borrow_mut().remove(&id) {
            if let Ok(word) = self.map.atomic_u64(slot * SLOT) {
                word.store(0, Ordering::Release);
            }
        }
    }
}

/// Reads the description of `id` from a peer's directory `map`, if there.
pub(crate) fn lookup(map: &Mapping, id: u64) -> Option<Vec<u8>> {
    for slot in slots(id) {
        let at = slot * SLOT;
        let word = map.atomic_u64(at).ok()?;
        if word.load(Ordering::Acquire) != id {
            continue;
        }
        let mut len = [0u8; 8];
        map.read_bytes(at + 8, &mut len).ok()?;
        let len = (u64::from_le_bytes(len) as usize).min(PAYLOAD);
        let mut out = vec![0u8; len];
        map.read_bytes(at + 16, &mut out).ok()?;
        if word.load(Ordering::Acquire) == id {
            return Some(out);
        }
    }
    None
}

/// Bytes of a directory (to map a peer's).
pub(crate) const LEN: usize = SLOTS * SLOT;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_lookup_withdraw() {
        let dir = Directory::new().unwrap();
        let peer = Mapping::open_shared(dir.name(), LEN).unwrap();
        assert_eq!(lookup(&peer, 5), None);
        assert!(dir.publish(5, b"five"));
        assert!(dir.publish(5 + SLOTS as u64, b"collides"));
        assert_eq!(lookup(&peer, 5).as_deref(), Some(&b"five"[..]));
        assert_eq!(
            lookup(&peer, 5 + SLOTS as u64).as_deref(),
            Some(&b"collides"[..])
        );
        dir.withdraw(5);
        assert_eq!(lookup(&peer, 5), None);
        assert!(!dir.publish(7, &[0; PAYLOAD + 1]), "too long");
        assert!(!dir.publish(0, b"zero"), "0 marks an empty slot");
        // Only PROBE slots per id: the next ones go unpublished.
        let crowd: Vec<bool> = (0..PROBE as u64 + 1)
            .map(|i| dir.publish(9 + i * SLOTS as u64, b"x"))
            .collect();
        assert_eq!(crowd.iter().filter(|b| !**b).count(), 1, "{crowd:?}");
    }
}
