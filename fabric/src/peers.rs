//! What this process knows of each rank of the job: its endpoint name,
//! its host and its board. Ranks are job-wide and never reused; the table
//! only grows (processes that join get the next ranks), and every entry
//! is written once. Reads take no lock (they sit on every path that asks
//! whether a peer shares this host): entries live in chunks of doubling
//! size, each found once made, so growing never moves an entry.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// One rank's place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Peer {
    /// Its endpoint name (empty: unknown, or the rank has left).
    pub name: Vec<u8>,
    /// Its host identity ([`crate::world::host_id`]).
    pub host: Option<u64>,
    /// Its board's name (empty when it has none).
    pub board: String,
}

/// Entries of the first chunk; chunk `c` holds `FIRST << c`.
const FIRST: u32 = 64;
/// Chunks: enough for [`crate::MAX_RANKS`] ranks.
const CHUNKS: usize = 19;

/// The per-rank table.
pub(crate) struct Peers {
    chunks: [OnceLock<Box<[OnceLock<Peer>]>>; CHUNKS],
    /// Ranks known (the job's size as this process sees it).
    len: AtomicU32,
}

/// Chunk and index in it of `rank`.
fn place(rank: u32) -> (usize, usize) {
    // Chunk c starts at FIRST * (2^c - 1).
    let c = (rank / FIRST + 1).ilog2();
    let start = FIRST * ((1 << c) - 1);
    (c as usize, (rank - start) as usize)
}

impl Peers {
    pub(crate) fn new() -> Peers {
        Peers {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            len: AtomicU32::new(0),
        }
    }

    /// Ranks known.
    pub(crate) fn len(&self) -> u32 {
        self.len.load(Ordering::Acquire)
    }

    /// `rank`'s entry, once set.
    pub(crate) fn get(&self, rank: u32) -> Option<&Peer> {
        if rank >= crate::MAX_RANKS {
            return None;
        }
        let (c, i) = place(rank);
        self.chunks.get(c)?.get()?.get(i)?.get()
    }

    /// Sets `rank`'s entry (the first setting stays) and counts the ranks
    /// up to it as known.
    pub(crate) fn set(&self, rank: u32, peer: Peer) {
        if rank >= crate::MAX_RANKS {
            return;
        }
        let (c, i) = place(rank);
        let chunk = self.chunks[c].get_or_init(|| {
            (0..(FIRST as usize) << c)
                .map(|_| OnceLock::new())
                .collect()
        });
        let _ = chunk[i].set(peer);
        self.grow(rank + 1);
    }

    /// Counts `len` ranks as known (entries may come later).
    pub(crate) fn grow(&self, len: u32) {
        self.len
            .fetch_max(len.min(crate::MAX_RANKS), Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_tile_the_ranks() {
        assert_eq!(place(0), (0, 0));
        assert_eq!(place(63), (0, 63));
        assert_eq!(place(64), (1, 0));
        assert_eq!(place(191), (1, 127));
        assert_eq!(place(192), (2, 0));
        let (c, i) = place(crate::MAX_RANKS - 1);
        assert!(c < CHUNKS && i < (FIRST as usize) << c);
    }

    #[test]
    fn entries_are_written_once_and_grow_the_table() {
        let p = Peers::new();
        assert_eq!((p.len(), p.get(0)), (0, None));
        let peer = |b: &str| Peer {
            name: vec![1],
            host: Some(7),
            board: b.into(),
        };
        p.set(0, peer("a"));
        p.set(0, peer("b"));
        assert_eq!(p.get(0).map(|x| x.board.as_str()), Some("a"));
        p.set(1000, peer("c"));
        assert_eq!(p.len(), 1001);
        assert_eq!(p.get(999), None);
        assert_eq!(p.get(1000).map(|x| x.board.as_str()), Some("c"));
        p.grow(5);
        assert_eq!(p.len(), 1001);
        assert_eq!(p.get(crate::MAX_RANKS), None);
    }
}
