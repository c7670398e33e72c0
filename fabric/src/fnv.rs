//! FNV-1a hashing for the small keys of the layers' maps (ids, ranks,
//! group keys, names): several times cheaper than std's SipHash, and
//! these keys are not chosen by an adversary. Here, at the bottom of the
//! stack, so that every layer above shares one.

use std::collections::{HashMap, HashSet};

/// The FNV-1a hasher.
#[derive(Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

/// A map with [`Fnv`] hashing.
pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;
/// A set with [`Fnv`] hashing.
pub type FastSet<K> = HashSet<K, std::hash::BuildHasherDefault<Fnv>>;
