//! Block distribution and the spec's Algorithm 1, as pure arithmetic on
//! `u64` counts (MaM's `int` displacements overflow past 2^31 elements).
//!
//! A global array of `len` elements over `parts` processes: process `i`
//! holds a contiguous block, the first `len % parts` processes one element
//! more than the others (as MaM distributes). A target finds the pieces
//! of its new block held by the sources from the arithmetic alone: the
//! sources take no part.

use std::ops::Range;

/// The block of `rank` among `parts` (global element indices). Empty for
/// a rank at or beyond `parts`, and for every rank when `parts` is 0.
pub fn block(len: u64, parts: u32, rank: u32) -> Range<u64> {
    if rank >= parts {
        return 0..0;
    }
    let (p, i) = (u64::from(parts), u64::from(rank));
    let (q, r) = (len / p, len % p);
    let start = i * q + i.min(r);
    start..start + q + u64::from(i < r)
}

/// The rank among `parts` whose block holds global element `at`
/// (`at < len`).
fn owner(len: u64, parts: u32, at: u64) -> u32 {
    let p = u64::from(parts);
    let (q, r) = (len / p, len % p);
    let long = r * (q + 1);
    let rank = if at < long {
        at / (q + 1)
    } else {
        r + (at - long) / q.max(1)
    };
    rank.min(p - 1) as u32
}

/// One piece of a redistribution: `count` elements from `from` in the
/// old block of source `peer` to `to` in the new block of a target (or,
/// seen from a source, from `from` in its old block to `to` in target
/// `peer`'s new block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// The other side's rank.
    pub peer: u32,
    /// First element in the source's old block.
    pub from: u64,
    /// First element in the target's new block.
    pub to: u64,
    /// Elements.
    pub count: u64,
}

/// Algorithm 1: what target `target` (of `nt`) reads from the sources
/// (of `ns`) to fill its new block of a `len`-element array, in source
/// order, one piece per intersecting source (none for a target beyond
/// `nt` or an empty block). The first piece starts inside its source's
/// block (`first_index`); every later one at index 0.
pub fn reads(len: u64, ns: u32, nt: u32, target: u32) -> Vec<Piece> {
    pieces(len, (nt, target), ns)
}

/// The converse: what source `source` (of `ns`) holds of each target's
/// (of `nt`) new block, in target order.
pub fn writes(len: u64, ns: u32, nt: u32, source: u32) -> Vec<Piece> {
    pieces(len, (ns, source), nt)
        .into_iter()
        .map(|p| Piece {
            from: p.to,
            to: p.from,
            ..p
        })
        .collect()
}

/// The intersections of block `me` of `mine` with the blocks of `theirs`:
/// `from` in their block, `to` in mine.
fn pieces(len: u64, (mine, me): (u32, u32), theirs: u32) -> Vec<Piece> {
    let own = block(len, mine, me);
    if own.is_empty() || theirs == 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut peer = owner(len, theirs, own.start);
    while peer < theirs {
        let other = block(len, theirs, peer);
        if other.start >= own.end {
            break;
        }
        let (start, end) = (own.start.max(other.start), own.end.min(other.end));
        if start < end {
            out.push(Piece {
                peer,
                from: start - other.start,
                to: start - own.start,
                count: end - start,
            });
        }
        peer += 1;
    }
    out
}

/// Per-peer counts of `pieces` over `n` peers (an alltoallv's counts).
pub fn counts(pieces: &[Piece], n: u32) -> Vec<u64> {
    let mut counts = vec![0; n as usize];
    for p in pieces {
        if let Some(c) = counts.get_mut(p.peer as usize) {
            *c += p.count;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every global element of `len`, by brute force: which source holds
    /// it (and where), which target gets it (and where).
    fn check(len: u64, ns: u32, nt: u32) {
        let mut got = 0u64;
        for t in 0..nt {
            let b = block(len, nt, t);
            let mut at = 0;
            for (k, p) in reads(len, ns, nt, t).iter().enumerate() {
                // In order, contiguous, no empty pieces, index 0 after the first.
                assert_eq!(p.to, at, "len {len} {ns}->{nt} target {t}");
                assert!(p.count > 0);
                assert!(k == 0 || p.from == 0);
                let s = block(len, ns, p.peer);
                assert_eq!(s.start + p.from, b.start + p.to);
                assert!(p.from + p.count <= s.end - s.start);
                at += p.count;
            }
            assert_eq!(at, b.end - b.start, "len {len} {ns}->{nt} target {t}");
            got += at;
        }
        assert_eq!(got, if nt == 0 { 0 } else { len });
        // The sources' view agrees with the targets'.
        for s in 0..ns {
            for w in writes(len, ns, nt, s) {
                let r = reads(len, ns, nt, w.peer);
                assert!(
                    r.contains(&Piece {
                        peer: s,
                        from: w.from,
                        to: w.to,
                        count: w.count,
                    }),
                    "len {len} {ns}->{nt} source {s}"
                );
            }
        }
    }

    #[test]
    fn blocks_cover_the_array_the_first_ranks_one_longer() {
        assert_eq!(block(10, 4, 0), 0..3);
        assert_eq!(block(10, 4, 1), 3..6);
        assert_eq!(block(10, 4, 2), 6..8);
        assert_eq!(block(10, 4, 3), 8..10);
        assert_eq!(block(10, 4, 4), 0..0);
        assert_eq!(block(2, 3, 2), 2..2);
        assert_eq!(block(5, 0, 0), 0..0);
        for len in [0u64, 1, 7, 100] {
            for parts in 1..=16 {
                let mut at = 0;
                for r in 0..parts {
                    let b = block(len, parts, r);
                    assert_eq!(b.start, at);
                    at = b.end;
                    for x in b {
                        assert_eq!(owner(len, parts, x), r);
                    }
                }
                assert_eq!(at, len);
            }
        }
    }

    #[test]
    fn algorithm_1_for_every_pair_up_to_16() {
        for ns in 1..=16u32 {
            for nt in 1..=16u32 {
                let lens = [
                    0,
                    1,
                    u64::from(ns.saturating_sub(1)),
                    u64::from(nt.saturating_sub(1)),
                    u64::from(ns * nt + 1),
                    1000 + u64::from(ns) + u64::from(nt),
                ];
                for len in lens {
                    check(len, ns, nt);
                }
            }
        }
    }

    #[test]
    fn beyond_32_bits() {
        let len = 1u64 << 40;
        for (ns, nt) in [(1, 3), (3, 2), (7, 16), (16, 5)] {
            let r = reads(len, ns, nt, nt - 1);
            let total: u64 = r.iter().map(|p| p.count).sum();
            let b = block(len, nt, nt - 1);
            assert_eq!(total, b.end - b.start);
            assert!(b.end - b.start > u64::from(u32::MAX));
            assert_eq!(r.last().map(|p| p.peer), Some(ns - 1));
            let w = writes(len, ns, nt, 0);
            assert_eq!(w[0].peer, 0);
        }
        check((1 << 40) + 3, 3, 5);
    }

    #[test]
    fn counts_per_peer() {
        let r = reads(10, 2, 3, 1);
        // Target 1 of 3 holds 4..7; sources hold 0..5 and 5..10.
        assert_eq!(counts(&r, 2), vec![1, 2]);
        assert_eq!(counts(&writes(10, 2, 3, 0), 3), vec![4, 1, 0]);
    }
}
