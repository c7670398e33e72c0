//! This process's part of its board (see
//! `onesided_fabric::Endpoint::board_name`): shared memory that processes
//! on the same host read instead of exchanging messages.
//!
//! Layout (20 KiB of the board):
//! - the directory: 64 slots of 256 bytes, each `[id: u64][len: u64]
//!   [description]`, the descriptions of this process's exposures and
//!   dynamic windows (a load instead of a control-plane round trip);
//! - 64 group counters of one cache line each, `[group key: u64][value:
//!   u64]`: how far this process has come in the barriers of a group
//!   (monotone; see [`crate::Barrier`]).
//!
//! The owner writes a slot while its key word is 0 (or its own), then
//! stores the key (release); a reader loads the key (acquire), copies, and
//! checks the key again, so it never takes a half-written or reused slot
//! for the one it wants. Entry `key` lives in one of the [`PROBE`] slots
//! from `key % SLOTS`; when they are all taken the entry is not published
//! and readers fall back to messages.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use onesided_fabric::{world::BOARD_LEN, Endpoint, Mapping};

use crate::Error;

const SLOTS: usize = 64;
const SLOT: usize = 256;
/// Slots tried for one key.
const PROBE: usize = 8;
/// Description bytes a directory slot holds.
const PAYLOAD: usize = SLOT - 16;
/// Where the group counters start, and their size.
const COUNTERS: usize = SLOTS * SLOT;
const COUNTER: usize = 64;

/// Bytes of the board this module uses.
pub(crate) const LEN: usize = COUNTERS + SLOTS * COUNTER;
const _: () = assert!(LEN <= BOARD_LEN);

fn slots(key: u64) -> impl Iterator<Item = usize> {
    (0..PROBE).map(move |i| (key as usize).wrapping_add(i) % SLOTS)
}

/// This process's directory and counters (the writing side).
pub(crate) struct Directory {
    map: Mapping,
    /// Directory slots in use, by id.
    used: RefCell<HashMap<u64, usize>>,
    /// Counter slots claimed, by group key (kept for good).
    groups: RefCell<HashMap<u64, usize>>,
}

impl Directory {
    /// This process's board, mapped here (a board of its own, which no
    /// peer knows, for an endpoint opened without `World`).
    pub(crate) fn new(ep: &Endpoint) -> Result<Directory, Error> {
        let map = match ep.board_name(ep.rank()) {
            Some(name) => Mapping::open_shared(name, LEN)?,
            None => Mapping::create_shared(LEN)?,
        };
        Ok(Directory {
            map,
            used: RefCell::default(),
            groups: RefCell::default(),
        })
    }

    /// Publishes `description` of `id`; whether there was room.
    pub(crate) fn publish(&self, id: u64, description: &[u8]) -> bool {
        if id == 0 || description.len() > PAYLOAD {
            return false;
        }
        let mut used = self.used.borrow_mut();
        let Some(slot) = slots(id).find(|s| !used.values().any(|u| u == s)) else {
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

    /// Sets `group`'s counter to `value` (claiming a counter the first
    /// time); whether peers can see it.
    pub(crate) fn signal(&self, group: u64, value: u64) -> bool {
        if group == 0 {
            return false;
        }
        let mut groups = self.groups.borrow_mut();
        let slot = match groups.get(&group) {
            Some(&slot) => slot,
            None => {
                let taken: Vec<usize> = groups.values().copied().collect();
                let Some(slot) = slots(group).find(|s| !taken.contains(s)) else {
                    return false;
                };
                groups.insert(group, slot);
                slot
            }
        };
        let at = COUNTERS + slot * COUNTER;
        match (self.map.atomic_u64(at), self.map.atomic_u64(at + 8)) {
            (Ok(key), Ok(counter)) => {
                counter.store(value, Ordering::Release);
                key.store(group, Ordering::Release);
                true
            }
            _ => false,
        }
    }
}

/// Reads the description of `id` from a peer's board `map`, if there.
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

/// `group`'s counter on a peer's board `map` (0 when it has none).
pub(crate) fn counter(map: &Mapping, group: u64) -> u64 {
    for slot in slots(group) {
        let at = COUNTERS + slot * COUNTER;
        if let (Ok(key), Ok(counter)) = (map.atomic_u64(at), map.atomic_u64(at + 8)) {
            if key.load(Ordering::Acquire) == group {
                return counter.load(Ordering::Acquire);
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standalone() -> Directory {
        Directory {
            map: Mapping::create_shared(LEN).unwrap(),
            used: RefCell::default(),
            groups: RefCell::default(),
        }
    }

    #[test]
    fn publish_lookup_withdraw() {
        let dir = standalone();
        let peer = Mapping::open_shared(dir.map.name().unwrap(), LEN).unwrap();
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

    #[test]
    fn group_counters_are_per_group_and_visible() {
        let dir = standalone();
        let peer = Mapping::open_shared(dir.map.name().unwrap(), LEN).unwrap();
        assert_eq!(counter(&peer, 42), 0);
        assert!(dir.signal(42, 3));
        assert!(dir.signal(42 + SLOTS as u64, 9));
        assert!(dir.signal(42, 4));
        assert_eq!(counter(&peer, 42), 4);
        assert_eq!(counter(&peer, 42 + SLOTS as u64), 9);
        assert!(!dir.signal(0, 1));
        let crowd = (2..=PROBE as u64 + 1)
            .filter(|i| !dir.signal(42 + i * SLOTS as u64, 1))
            .count();
        assert_eq!(crowd, 2, "two slots were taken already");
    }
}
