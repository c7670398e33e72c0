//! This process's part of its board (see
//! `onesided_fabric::Ranks::board_name`): shared memory that processes
//! on the same host read instead of exchanging messages.
//!
//! Layout (20 KiB of the board):
//! - the directory: 64 slots of 256 bytes, each `[id: u64][seq: u64]
//!   [len: u64][description]`, the descriptions of this process's
//!   exposures and dynamic windows (a load instead of a control-plane round
//!   trip), or "ask me" for those too long for a slot;
//! - 64 group counters of one cache line each, `[group key: u64][value:
//!   u64]`: how far this process has come in the barriers of a group
//!   (monotone; see [`crate::Barrier`]).
//!
//! A directory slot is a sequence lock: the owner makes `seq` odd, writes,
//! then makes it even again; a reader copies between two equal, even
//! readings of `seq`, so it never takes a half-written or rewritten slot
//! for the one it wants. A counter is one word, written last. Entry `key`
//! lives in one of the [`PROBE`] slots from `key % SLOTS`; when they are
//! all taken the entry is not published and readers fall back to messages
//! (after a while).

use std::collections::HashMap;
use std::sync::atomic::{fence, Ordering};
use std::sync::Mutex;

use onesided_fabric::{world::BOARD_LEN, Endpoint, Mapping};

use crate::Error;

const SLOTS: usize = 64;
const SLOT: usize = 256;
/// Slots tried for one key.
const PROBE: usize = 8;
/// Description bytes a directory slot holds.
const PAYLOAD: usize = SLOT - 24;
/// The length that says "too long: ask the owner".
const ASK_OWNER: u64 = u64::MAX;
/// Where the group counters start, and their size.
const COUNTERS: usize = SLOTS * SLOT;
const COUNTER: usize = 64;

/// Where the word saying "an `Rma` has used this board" lives.
const TAKEN: usize = COUNTERS + SLOTS * COUNTER;

/// Bytes of the board this module uses.
pub(crate) const LEN: usize = TAKEN + 64;
const _: () = assert!(LEN <= BOARD_LEN);

/// The group counters `group` may live in, in the order they are tried
/// (none for group 0, which marks an empty counter).
pub(crate) fn counters(group: u64) -> impl Iterator<Item = usize> {
    slots(group).filter(move |_| group != 0)
}

fn slots(key: u64) -> impl Iterator<Item = usize> {
    (0..PROBE).map(move |i| (key as usize).wrapping_add(i) % SLOTS)
}

/// This process's directory and counters (the writing side).
pub(crate) struct Directory {
    map: Mapping,
    /// Directory slots in use, by id.
    used: Mutex<HashMap<u64, usize>>,
}

impl Directory {
    /// This process's board, mapped here (a board of its own, which no
    /// peer knows, for an endpoint opened without `World`).
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when an earlier `Rma` used this board: its
    /// group counters and object numbers would not match a new one's, so
    /// there is one `Rma` per endpoint for the life of the process.
    pub(crate) fn new(ep: &Endpoint) -> Result<Directory, Error> {
        let map = match ep.ranks().board_name(ep.rank()) {
            Some(name) => Mapping::open_shared(name, LEN)?,
            None => Mapping::create_shared(LEN)?,
        };
        if map.atomic_u64(TAKEN)?.swap(1, Ordering::AcqRel) != 0 {
            return Err(Error::EpochConflict(
                "one Rma per endpoint: an earlier one used this endpoint's board",
            ));
        }
        Ok(Directory {
            map,
            used: Mutex::default(),
        })
    }

    /// Publishes `description` of `id` (or, when it is too long, that
    /// readers must ask); whether there was a slot. Publishing an id again
    /// rewrites its slot.
    pub(crate) fn publish(&self, id: u64, description: &[u8]) -> bool {
        if id == 0 {
            return false;
        }
        let mut used = crate::lock_state(&self.used);
        let slot = match used.get(&id) {
            Some(&slot) => slot,
            None => match slots(id).find(|s| !used.values().any(|u| u == s)) {
                Some(slot) => slot,
                None => return false,
            },
        };
        let (len, body) = if description.len() > PAYLOAD {
            (ASK_OWNER, &[][..])
        } else {
            (description.len() as u64, description)
        };
        let written = self.write_slot(slot, id, |map, at| {
            map.write_bytes(at + 16, &len.to_le_bytes())?;
            map.write_bytes(at + 24, body)
        });
        if written {
            used.insert(id, slot);
        }
        written
    }

    /// Withdraws `id` (if published).
    pub(crate) fn withdraw(&self, id: u64) {
        let slot = crate::lock_state(&self.used).remove(&id);
        if let Some(slot) = slot {
            self.write_slot(slot, 0, |_, _| Ok(()));
        }
    }

    /// Rewrites `slot` to hold `key` and what `fill` writes, under its
    /// sequence lock; whether it succeeded.
    fn write_slot(
        &self,
        slot: usize,
        key: u64,
        fill: impl FnOnce(&Mapping, usize) -> onesided_fabric::Result<()>,
    ) -> bool {
        let at = slot * SLOT;
        let (Ok(word), Ok(seq)) = (self.map.atomic_u64(at), self.map.atomic_u64(at + 8)) else {
            return false;
        };
        seq.fetch_add(1, Ordering::AcqRel);
        fence(Ordering::Release);
        let filled = fill(&self.map, at).is_ok();
        word.store(if filled { key } else { 0 }, Ordering::Release);
        seq.fetch_add(1, Ordering::Release);
        filled
    }

    /// Sets `group`'s `counter` (one of [`counters`], claimed by
    /// [`crate::barrier::claim`]) to `value`; whether peers can see it.
    pub(crate) fn raise(&self, counter: usize, group: u64, value: u64) -> bool {
        if counter >= SLOTS {
            return false;
        }
        let at = COUNTERS + counter * COUNTER;
        match (self.map.atomic_u64(at), self.map.atomic_u64(at + 8)) {
            (Ok(key), Ok(value_at)) => {
                value_at.store(value, Ordering::Release);
                key.store(group, Ordering::Release);
                true
            }
            _ => false,
        }
    }
}

/// What a peer's board says about an id.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Its description.
    Description(Vec<u8>),
    /// It is there, too long for the board: ask its owner.
    AskOwner,
    /// Not there (yet), or being rewritten.
    Nothing,
}

/// Reads what a peer's board `map` says about `id`.
pub(crate) fn lookup(map: &Mapping, id: u64) -> Found {
    for slot in slots(id) {
        let at = slot * SLOT;
        let (Ok(word), Ok(seq)) = (map.atomic_u64(at), map.atomic_u64(at + 8)) else {
            return Found::Nothing;
        };
        let before = seq.load(Ordering::Acquire);
        if before % 2 == 1 || word.load(Ordering::Acquire) != id {
            continue;
        }
        let mut len = [0u8; 8];
        if map.read_bytes(at + 16, &mut len).is_err() {
            return Found::Nothing;
        }
        let len = u64::from_le_bytes(len);
        let found = if len == ASK_OWNER {
            Found::AskOwner
        } else {
            let mut out = vec![0u8; (len as usize).min(PAYLOAD)];
            if map.read_bytes(at + 24, &mut out).is_err() {
                return Found::Nothing;
            }
            Found::Description(out)
        };
        fence(Ordering::Acquire);
        if seq.load(Ordering::Relaxed) == before && word.load(Ordering::Relaxed) == id {
            return found;
        }
        return Found::Nothing;
    }
    Found::Nothing
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
            used: Mutex::default(),
        }
    }

    #[test]
    fn publish_lookup_withdraw() {
        let dir = standalone();
        let peer = Mapping::open_shared(dir.map.name().unwrap(), LEN).unwrap();
        let found = |bytes: &[u8]| Found::Description(bytes.to_vec());
        assert_eq!(lookup(&peer, 5), Found::Nothing);
        assert!(dir.publish(5, b"five"));
        assert!(dir.publish(5 + SLOTS as u64, b"collides"));
        assert_eq!(lookup(&peer, 5), found(b"five"));
        assert_eq!(lookup(&peer, 5 + SLOTS as u64), found(b"collides"));
        assert!(dir.publish(5, b"five again"), "rewritten in place");
        assert_eq!(lookup(&peer, 5), found(b"five again"));
        dir.withdraw(5);
        assert_eq!(lookup(&peer, 5), Found::Nothing);
        assert!(dir.publish(7, &[0; PAYLOAD + 1]));
        assert_eq!(lookup(&peer, 7), Found::AskOwner, "too long: ask");
        dir.withdraw(7);
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
        // Two groups probing the same counters, in the first two.
        let (a, b) = (42, 42 + SLOTS as u64);
        let (first, second) = (counters(a).next().unwrap(), counters(b).nth(1).unwrap());
        assert_eq!(counter(&peer, a), 0);
        assert!(dir.raise(first, a, 3));
        assert!(dir.raise(second, b, 9));
        assert!(dir.raise(first, a, 4));
        assert_eq!(counter(&peer, a), 4);
        assert_eq!(counter(&peer, b), 9);
        assert!(!dir.raise(SLOTS, a, 1), "past the counters");
        assert_eq!(counters(0).count(), 0);
        assert_eq!(counters(a).count(), PROBE);
    }
}
