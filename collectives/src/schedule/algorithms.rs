//! The algorithms, each a function from (group size, this rank, the call's
//! shape) to this rank's [`Schedule`]. Pure; every one is correct for
//! every group size (not only powers of two) and for uneven and zero
//! counts, which the tests check against serial references in
//! [`crate::schedule::simulate`].
//!
//! Buffers: `Input` holds this rank's contribution (a bcast's data is the
//! root's `Output`); `Output` receives the result. Counts are elements.
//! Algorithms marked *commutative only* combine operands out of rank order.

use crate::algorithm::Algorithm;
use crate::schedule::{Action, Buf, Schedule, Slice};

/// ceil(log2 n): rounds of the tree and doubling algorithms.
pub fn log2_ceil(n: u32) -> usize {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as usize
    }
}

/// Block `i` of `count` elements split in `n` (the first `count % n`
/// blocks one element longer): (first element, elements).
pub fn block(count: usize, n: u32, i: u32) -> (usize, usize) {
    let (n, i) = (n as usize, i as usize);
    let (base, extra) = (count / n.max(1), count % n.max(1));
    (i * base + i.min(extra), base + usize::from(i < extra))
}

/// Displacements of `counts` laid end to end.
pub fn displacements(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect()
}

fn copy(from: Slice, to: Slice) -> Action {
    Action::Copy { from, to }
}
fn send(to: u32, data: Slice) -> Action {
    Action::Send { to, data }
}
fn recv(from: u32, into: Slice) -> Action {
    Action::Recv { from, into }
}
fn recv_reduce(from: u32, into: Slice, received_first: bool) -> Action {
    Action::RecvReduce {
        from,
        into,
        received_first,
    }
}
fn out(at: usize, len: usize) -> Slice {
    Slice::new(Buf::Output, at, len)
}
fn input(at: usize, len: usize) -> Slice {
    Slice::new(Buf::Input, at, len)
}
fn scratch(at: usize, len: usize) -> Slice {
    Slice::new(Buf::Scratch, at, len)
}

/// Barrier, dissemination: ceil(log2 n) rounds of one empty message.
pub fn barrier_dissemination(n: u32, me: u32) -> Schedule {
    let mut s = Schedule::default();
    for k in 0..log2_ceil(n) {
        let step = 1u32 << k;
        s.push(k, send((me + step) % n, out(0, 0)));
        s.push(k, recv((me + n - step) % n, out(0, 0)));
    }
    s
}

/// Bcast, binomial tree from `root`: ceil(log2 n) rounds.
pub fn bcast_binomial(n: u32, me: u32, root: u32, count: usize) -> Schedule {
    let rel = (me + n - root) % n;
    let real = |r: u32| (r + root) % n;
    let mut s = Schedule::default();
    for k in 0..log2_ceil(n) {
        let step = 1u32 << k;
        if rel < step && rel + step < n {
            s.push(k, send(real(rel + step), out(0, count)));
        } else if rel >= step && rel < 2 * step {
            s.push(k, recv(real(rel - step), out(0, count)));
        }
    }
    s
}

/// Bcast, linear: the root sends to every other rank, at most
/// [`LINEAR_WINDOW`] a round (one round up to 33 ranks).
pub fn bcast_linear(n: u32, me: u32, root: u32, count: usize) -> Schedule {
    let mut s = Schedule::with_rounds(1);
    for r in (0..n).filter(|&r| r != root) {
        if me == root {
            s.push(window(root, r), send(r, out(0, count)));
        } else if me == r {
            s.push(window(root, r), recv(root, out(0, count)));
        }
    }
    s
}

/// The round of the root's message with rank `r` in a linear algorithm:
/// at most [`LINEAR_WINDOW`] peers a round, in rank order (one round up
/// to 33 ranks).
fn window(root: u32, r: u32) -> usize {
    let j = if r < root { r } else { r.saturating_sub(1) };
    (j / LINEAR_WINDOW) as usize
}

/// Bcast, scatter then ring allgather: the root sends each rank its block,
/// then n - 1 ring rounds (bandwidth-bound, for large messages).
pub fn bcast_scatter_allgather(n: u32, me: u32, root: u32, count: usize) -> Schedule {
    let mut s = Schedule::with_rounds(n as usize);
    let blk = |i: u32| {
        let (at, len) = block(count, n, i);
        out(at, len)
    };
    for r in (0..n).filter(|&r| r != root) {
        if me == root {
            s.push(0, send(r, blk(r)));
        } else if me == r {
            s.push(0, recv(root, blk(me)));
        }
    }
    for k in 1..n {
        s.push(k as usize, send((me + 1) % n, blk((me + n - (k - 1)) % n)));
        s.push(k as usize, recv((me + n - 1) % n, blk((me + n - k) % n)));
    }
    s
}

/// Bcast, binomial scatter then recursive-doubling allgather (MPICH's
/// for medium and large messages): each rank gets its block down the
/// tree (ceil(log2 n) rounds, the root's count (n-1)/n elements out), then
/// the blocks are gathered everywhere by doubling (log2 p rounds, and a
/// fold and unfold when n is not a power of two): about 2 log2 n rounds
/// moving 2 count (n-1)/n elements, where the ring takes n rounds.
pub fn bcast_scatter_doubling(n: u32, me: u32, root: u32, count: usize) -> Schedule {
    let counts: Vec<usize> = (0..n).map(|i| block(count, n, i).1).collect();
    let d = displacements(&counts);
    let at = d[me as usize];
    // The scatter reads the root's blocks where the broadcast's data
    // is, and leaves each rank's block in place.
    let scatter = scatterv_binomial(n, me, root, &counts);
    let mut s = Schedule::with_rounds(0);
    let offset = scatter.rounds.len() - 1;
    append(&mut s, 0, scatter, |x| match x.buf {
        Buf::Input => out(x.at, x.len),
        Buf::Output => out(at + x.at, x.len),
        Buf::Scratch => x,
    });
    // Its last round's copy comes before the allgather's first sends.
    let gather = allgatherv_recursive_doubling(n, me, &counts);
    append(&mut s, offset, gather, |x| match x.buf {
        Buf::Input => out(at + x.at, x.len),
        _ => x,
    });
    s
}

/// Appends `part`'s rounds to `s` from round `at`, its slices moved by
/// `remap`; a copy onto itself is left out. Scratch is shared: parts run
/// one after the other.
fn append(s: &mut Schedule, at: usize, part: Schedule, remap: impl Fn(Slice) -> Slice) {
    s.scratch = s.scratch.max(part.scratch);
    for (r, actions) in part.rounds.into_iter().enumerate() {
        for a in actions {
            let a = match a {
                Action::Copy { from, to } => {
                    let (from, to) = (remap(from), remap(to));
                    if from == to {
                        continue;
                    }
                    Action::Copy { from, to }
                }
                Action::Send { to, data } => Action::Send {
                    to,
                    data: remap(data),
                },
                Action::Recv { from, into } => Action::Recv {
                    from,
                    into: remap(into),
                },
                Action::RecvReduce {
                    from,
                    into,
                    received_first,
                } => Action::RecvReduce {
                    from,
                    into: remap(into),
                    received_first,
                },
                Action::Reduce { from, into } => Action::Reduce {
                    from: remap(from),
                    into: remap(into),
                },
            };
            s.push(at + r, a);
        }
    }
}

/// Reduce, binomial tree to `root`: ceil(log2 n) rounds. For a
/// non-commutative operation the tree is rooted at rank 0 (whose subtrees
/// are contiguous in rank order) and rank 0 forwards the result to `root`.
pub fn reduce_binomial(n: u32, me: u32, root: u32, count: usize, commutative: bool) -> Schedule {
    let tree_root = if commutative { root } else { 0 };
    let rel = (me + n - tree_root) % n;
    let real = |r: u32| (r + tree_root) % n;
    let rounds = log2_ceil(n);
    let receives = (0..rounds).any(|k| {
        let step = 1u32 << k;
        rel.is_multiple_of(2 * step) && rel + step < n
    });
    // Where this rank accumulates: the root its output, an inner node
    // scratch memory, a leaf nothing (it sends its input as it is).
    let acc = if me == tree_root && me == root {
        out(0, count)
    } else if receives {
        scratch(0, count)
    } else {
        input(0, count)
    };
    let mut s = Schedule::with_rounds(rounds + 1);
    if acc.buf == Buf::Scratch {
        s.scratch = count;
    }
    if acc.buf != Buf::Input {
        s.push(0, copy(input(0, count), acc));
    }
    for k in 0..rounds {
        let step = 1u32 << k;
        if rel % (2 * step) == step {
            s.push(k, send(real(rel - step), acc));
        } else if rel.is_multiple_of(2 * step) && rel + step < n {
            s.push(k, recv_reduce(real(rel + step), acc, false));
        }
    }
    if me == tree_root && me != root {
        s.push(rounds, send(root, acc));
    } else if me == root && me != tree_root {
        s.push(rounds, recv(tree_root, out(0, count)));
    }
    s
}

/// Reduce, reduce-scatter then gather (Rabenseifner's reduce): a fold
/// round, recursive halving over the p remaining ranks, then every one
/// sends its reduced block to `root` in one round (bandwidth-bound: each
/// rank moves about count elements instead of count log2 n).
/// *Commutative only.*
pub fn reduce_scatter_gather(n: u32, me: u32, root: u32, count: usize) -> Schedule {
    let f = Fold::new(n);
    let levels = f.p.trailing_zeros() as usize;
    let gather = levels + 1;
    let mut s = Schedule::with_rounds(gather + 1);
    // The root accumulates in its output, the others in scratch memory.
    let acc = |at: usize, len: usize| {
        if me == root {
            out(at, len)
        } else {
            scratch(at, len)
        }
    };
    if me != root {
        s.scratch = count;
    }
    let all = acc(0, count);
    s.push(0, copy(input(0, count), all));
    f.fold(&mut s, me, all, None);
    let blocks = |lo: u32, hi: u32| f.blocks(count, lo, hi, acc);
    if let Some(new) = f.new_rank(me) {
        f.recursive_halving(&mut s, new, &blocks);
        if me != root {
            s.push(gather, send(root, blocks(new, new + 1)));
        }
    }
    if me == root {
        for j in 0..f.p {
            let from = f.real(j);
            if from != me {
                let (at, len) = block(count, f.p, j);
                s.push(gather, recv(from, out(at, len)));
            }
        }
    }
    s
}

/// Reduce, linear: every rank sends to `root`, which combines in rank
/// order (any operation), at most [`LINEAR_WINDOW`] a round.
pub fn reduce_linear(n: u32, me: u32, root: u32, count: usize) -> Schedule {
    let mut s = Schedule::with_rounds(1);
    if me != root {
        s.push(window(root, me), send(root, input(0, count)));
        return s;
    }
    // In rank order, round after round: the root's own operand in the
    // round of the rank before it.
    for r in 0..n {
        let round = match r == root {
            true => window(root, r.saturating_sub(1)),
            false => window(root, r),
        };
        match (r, r == root) {
            (0, true) => s.push(0, copy(input(0, count), out(0, count))),
            (0, false) => s.push(round, recv(0, out(0, count))),
            (_, true) => s.push(
                round,
                Action::Reduce {
                    from: input(0, count),
                    into: out(0, count),
                },
            ),
            (_, false) => s.push(round, recv_reduce(r, out(0, count), false)),
        }
    }
    s
}

/// The fold of the recursive-doubling algorithms for any `n`: the
/// largest power of two `p <= n`, and `rem = n - p`. Ranks below `2 rem`
/// pair up (the even one hands its part to the odd one and waits); the
/// `p` remaining ranks are renumbered so that each covers a contiguous
/// range of original ranks.
struct Fold {
    p: u32,
    rem: u32,
}

impl Fold {
    fn new(n: u32) -> Fold {
        let p = if n == 0 {
            0
        } else {
            1 << (31 - n.leading_zeros())
        };
        Fold { p, rem: n - p }
    }

    /// The new rank of `me` (`None`: it waits out the doubling).
    fn new_rank(&self, me: u32) -> Option<u32> {
        if me < 2 * self.rem {
            (me % 2 == 1).then_some(me / 2)
        } else {
            Some(me - self.rem)
        }
    }

    /// The original rank that plays new rank `j`.
    fn real(&self, j: u32) -> u32 {
        if j < self.rem {
            2 * j + 1
        } else {
            j + self.rem
        }
    }

    /// Round 0's fold of `acc` (and, with `unfold`, the result handed
    /// back in that round): each even rank below `2 rem` sends its part to
    /// the odd rank above it, which combines it, the even rank's operand
    /// first.
    fn fold(&self, s: &mut Schedule, me: u32, acc: Slice, unfold: Option<usize>) {
        if me >= 2 * self.rem {
            return;
        }
        if me.is_multiple_of(2) {
            s.push(0, send(me + 1, acc));
            if let Some(r) = unfold {
                s.push(r, recv(me + 1, acc));
            }
        } else {
            s.push(0, recv_reduce(me - 1, acc, true));
            if let Some(r) = unfold {
                s.push(r, send(me - 1, acc));
            }
        }
    }

    /// Blocks `lo..hi` of `count` elements split in `p`, as one slice made
    /// by `slice(first element, elements)`.
    fn blocks(
        &self,
        count: usize,
        lo: u32,
        hi: u32,
        slice: impl Fn(usize, usize) -> Slice,
    ) -> Slice {
        let (start, end) = (block(count, self.p, lo).0, block(count, self.p, hi).0);
        slice(start, end - start)
    }

    /// Reduce-scatter by recursive halving among the `p` ranks, rounds 1
    /// to log2 p: each round a rank keeps half its blocks and combines the
    /// partner's half of them. New rank `new` ends holding block `new`;
    /// returns that range. *Commutative only.*
    fn recursive_halving(
        &self,
        s: &mut Schedule,
        new: u32,
        blocks: &impl Fn(u32, u32) -> Slice,
    ) -> (u32, u32) {
        let (mut lo, mut hi) = (0u32, self.p);
        for j in 0..self.p.trailing_zeros() as usize {
            let mask = self.p >> (j + 1);
            let partner = self.real(new ^ mask);
            let mid = lo + mask;
            let (keep, give) = if new & mask == 0 {
                ((lo, mid), (mid, hi))
            } else {
                ((mid, hi), (lo, mid))
            };
            s.push(j + 1, send(partner, blocks(give.0, give.1)));
            s.push(j + 1, recv_reduce(partner, blocks(keep.0, keep.1), false));
            (lo, hi) = keep;
        }
        (lo, hi)
    }

    /// The original ranks new rank `j` covers: (first, last).
    fn covers(&self, j: u32) -> (u32, u32) {
        if j < self.rem {
            (2 * j, 2 * j + 1)
        } else {
            (j + self.rem, j + self.rem)
        }
    }
}

/// Allreduce, recursive doubling (any `n`, any operation): a fold round,
/// log2 p exchange rounds of the whole vector, an unfold round.
pub fn allreduce_recursive_doubling(n: u32, me: u32, count: usize) -> Schedule {
    let f = Fold::new(n);
    let rounds = f.p.trailing_zeros() as usize;
    let mut s = Schedule::with_rounds(rounds + 2);
    let all = out(0, count);
    s.push(0, copy(input(0, count), all));
    f.fold(&mut s, me, all, Some(rounds + 1));
    if let Some(new) = f.new_rank(me) {
        for k in 0..rounds {
            let partner = new ^ (1 << k);
            s.push(k + 1, send(f.real(partner), all));
            s.push(k + 1, recv_reduce(f.real(partner), all, partner < new));
        }
    }
    s
}

/// Allreduce, Rabenseifner: a fold round (as recursive doubling), then
/// reduce-scatter by recursive halving and allgather by recursive doubling
/// over the p remaining ranks (2 log2 p rounds moving 2 count (p-1)/p
/// elements each), then an unfold round. *Commutative only.*
pub fn allreduce_rabenseifner(n: u32, me: u32, count: usize) -> Schedule {
    let f = Fold::new(n);
    let levels = f.p.trailing_zeros() as usize;
    let mut s = Schedule::with_rounds(2 * levels + 2);
    let all = out(0, count);
    s.push(0, copy(input(0, count), all));
    f.fold(&mut s, me, all, Some(2 * levels + 1));
    let Some(new) = f.new_rank(me) else {
        return s;
    };
    let blocks = |lo: u32, hi: u32| f.blocks(count, lo, hi, out);
    let (mut lo, mut hi) = f.recursive_halving(&mut s, new, &blocks);
    for j in 0..levels {
        let mask = 1u32 << j;
        let partner = f.real(new ^ mask);
        let (plo, phi) = if new & mask == 0 {
            (hi, hi + (hi - lo))
        } else {
            (lo - (hi - lo), lo)
        };
        s.push(levels + j + 1, send(partner, blocks(lo, hi)));
        s.push(levels + j + 1, recv(partner, blocks(plo, phi)));
        (lo, hi) = (lo.min(plo), hi.max(phi));
    }
    s
}

/// Reduce-scatter by ring over `blocks` (first element, elements) of an
/// `acc` buffer holding this rank's contribution: after n - 1 rounds
/// starting at `first`, rank `me` holds the reduction of its own block.
/// *Commutative only.*
fn ring_reduce_scatter(
    s: &mut Schedule,
    n: u32,
    me: u32,
    first: usize,
    acc: Buf,
    blocks: &[(usize, usize)],
) {
    let blk = |i: u32| Slice::new(acc, blocks[i as usize].0, blocks[i as usize].1);
    for k in 0..n.saturating_sub(1) {
        s.push_data(
            first + k as usize,
            send((me + 1) % n, blk((me + 2 * n - k - 1) % n)),
        );
        s.push_data(
            first + k as usize,
            recv_reduce((me + n - 1) % n, blk((me + 2 * n - k - 2) % n), false),
        );
    }
}

/// Allgather by ring over `blocks` of `Output`, each rank starting with its
/// own: n - 1 rounds from `first`.
fn ring_allgather(s: &mut Schedule, n: u32, me: u32, first: usize, blocks: &[(usize, usize)]) {
    let blk = |i: u32| out(blocks[i as usize].0, blocks[i as usize].1);
    for k in 0..n.saturating_sub(1) {
        s.push_data(
            first + k as usize,
            send((me + 1) % n, blk((me + n - k) % n)),
        );
        s.push_data(
            first + k as usize,
            recv((me + n - 1) % n, blk((me + 2 * n - k - 1) % n)),
        );
    }
}

/// Allreduce, ring: reduce-scatter then allgather, 2 (n - 1) rounds of
/// count / n elements (bandwidth-bound). *Commutative only.*
pub fn allreduce_ring(n: u32, me: u32, count: usize) -> Schedule {
    let blocks: Vec<(usize, usize)> = (0..n).map(|i| block(count, n, i)).collect();
    let mut s = Schedule::with_rounds(1);
    s.push(0, copy(input(0, count), out(0, count)));
    ring_reduce_scatter(&mut s, n, me, 1, Buf::Output, &blocks);
    ring_allgather(&mut s, n, me, n as usize, &blocks);
    s
}

/// Gather(v), linear: every rank sends its `counts[me]` elements to
/// `root`, which lays them out in rank order, at most [`LINEAR_WINDOW`]
/// a round.
pub fn gatherv_linear(n: u32, me: u32, root: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let mut s = Schedule::with_rounds(1);
    let mine = counts[me as usize];
    if me != root {
        s.push_data(window(root, me), send(root, input(0, mine)));
        return s;
    }
    for r in 0..n as usize {
        let into = out(d[r], counts[r]);
        if r as u32 == root {
            s.push(0, copy(input(0, mine), into));
        } else {
            s.push_data(window(root, r as u32), recv(r as u32, into));
        }
    }
    s
}

/// Scatter(v), linear: `root` sends each rank its `counts[r]` elements,
/// at most [`LINEAR_WINDOW`] a round.
pub fn scatterv_linear(n: u32, me: u32, root: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let mut s = Schedule::with_rounds(1);
    let mine = counts[me as usize];
    if me != root {
        s.push_data(window(root, me), recv(root, out(0, mine)));
        return s;
    }
    for r in 0..n as usize {
        let from = input(d[r], counts[r]);
        if r as u32 == root {
            s.push(0, copy(from, out(0, mine)));
        } else {
            s.push_data(window(root, r as u32), send(r as u32, from));
        }
    }
    s
}

/// Offsets, in relative-rank order from `from`, of the blocks of
/// relative ranks `from..to` (`counts` by real rank; relative rank `r` is
/// real rank `(r + root) % n`).
fn relative_offsets(counts: &[usize], root: u32, from: u32, to: u32) -> Vec<usize> {
    let n = counts.len() as u32;
    (from..=to)
        .scan(0, |at, r| {
            let here = *at;
            if r < to {
                *at += counts[((r + root) % n) as usize];
            }
            Some(here)
        })
        .collect()
}

/// This rank's place in the binomial tree of gather(v) and scatter(v)
/// from `root`, whose subtree's blocks lie in scratch in relative-rank
/// order.
struct Tree {
    n: u32,
    root: u32,
    /// This rank's relative rank, the tree's rounds, the end (exclusive)
    /// of its subtree and the level it hangs from its parent at.
    rel: u32,
    rounds: usize,
    end: u32,
    parent: Option<usize>,
    /// Offsets in scratch of the blocks of relative ranks `rel..=end`.
    at: Vec<usize>,
}

impl Tree {
    fn new(n: u32, me: u32, root: u32, counts: &[usize]) -> Tree {
        let rel = (me + n - root) % n;
        let (end, parent) = subtree(n, rel);
        Tree {
            n,
            root,
            rel,
            rounds: log2_ceil(n),
            end,
            parent,
            at: relative_offsets(counts, root, rel, end),
        }
    }

    /// The real rank of relative rank `r`.
    fn real(&self, r: u32) -> u32 {
        (r + self.root) % self.n
    }

    /// The scratch holding the blocks of relative ranks `a..b`.
    fn span(&self, a: u32, b: u32) -> Slice {
        let (x, y) = (
            self.at[(a - self.rel) as usize],
            self.at[(b - self.rel) as usize],
        );
        scratch(x, y - x)
    }
}

/// The end (exclusive) of relative rank `rel`'s subtree in the binomial
/// tree of `n`, and the tree level at which it hangs from its parent
/// (`None`: the root).
fn subtree(n: u32, rel: u32) -> (u32, Option<usize>) {
    for k in 0..log2_ceil(n) {
        let step = 1u32 << k;
        if rel % (2 * step) == step {
            return ((rel + step).min(n), Some(k));
        }
    }
    (n, None)
}

/// Gather(v), binomial tree to `root`: ceil(log2 n) rounds; each rank
/// forwards its subtree's blocks (contiguous in relative rank order) in
/// one message.
pub fn gatherv_binomial(n: u32, me: u32, root: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let t = Tree::new(n, me, root, counts);
    let (rel, rounds, end, parent, at) = (t.rel, t.rounds, t.end, t.parent, &t.at);
    let (real, span) = (|r| t.real(r), |a, b| t.span(a, b));
    let mut s = Schedule::with_rounds(rounds + 1);
    s.scratch = at[(end - rel) as usize];
    let mine = counts[me as usize];
    s.push(0, copy(input(0, mine), scratch(0, mine)));
    for k in 0..parent.unwrap_or(rounds) {
        let step = 1u32 << k;
        if rel + step < end {
            s.push_data(
                k,
                recv(
                    real(rel + step),
                    span(rel + step, (rel + 2 * step).min(end)),
                ),
            );
        }
    }
    if let Some(k) = parent {
        s.push_data(k, send(real(rel - (1 << k)), span(rel, end)));
    } else {
        for r in 0..n {
            let o = real(r) as usize;
            s.push(
                rounds,
                copy(scratch(at[r as usize], counts[o]), out(d[o], counts[o])),
            );
        }
    }
    s
}

/// Scatter(v), binomial tree from `root`: ceil(log2 n) rounds; each rank
/// passes on its subtree's blocks in one message.
pub fn scatterv_binomial(n: u32, me: u32, root: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let t = Tree::new(n, me, root, counts);
    let (rel, rounds, end, parent, at) = (t.rel, t.rounds, t.end, t.parent, &t.at);
    let (real, span) = (|r| t.real(r), |a, b| t.span(a, b));
    // The tree from the top down: level k runs in round rounds - k, after
    // round 0 where the root lays its input out in relative order.
    let round_of = |k: usize| rounds - k;
    let mut s = Schedule::with_rounds(rounds + 2);
    s.scratch = at[(end - rel) as usize];
    if parent.is_none() {
        for r in 0..n {
            let o = real(r) as usize;
            s.push(
                0,
                copy(input(d[o], counts[o]), scratch(at[r as usize], counts[o])),
            );
        }
    }
    if let Some(k) = parent {
        s.push_data(round_of(k), recv(real(rel - (1 << k)), span(rel, end)));
    }
    for k in (0..parent.unwrap_or(rounds)).rev() {
        let step = 1u32 << k;
        if rel + step < end {
            s.push_data(
                round_of(k),
                send(
                    real(rel + step),
                    span(rel + step, (rel + 2 * step).min(end)),
                ),
            );
        }
    }
    let mine = counts[me as usize];
    s.push(rounds + 1, copy(scratch(0, mine), out(0, mine)));
    s
}

/// Allgather(v), ring: n - 1 rounds, each passing one rank's block on.
pub fn allgatherv_ring(n: u32, me: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let blocks: Vec<(usize, usize)> = d.iter().copied().zip(counts.iter().copied()).collect();
    let mut s = Schedule::with_rounds(1);
    let mine = counts[me as usize];
    s.push(0, copy(input(0, mine), out(d[me as usize], mine)));
    ring_allgather(&mut s, n, me, 1, &blocks);
    s
}

/// Allgather(v), recursive doubling (any `n`): a fold round, log2 p rounds
/// exchanging what each holds (contiguous in rank order), an unfold round.
pub fn allgatherv_recursive_doubling(n: u32, me: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let range = |(a, b): (u32, u32)| {
        out(
            d[a as usize],
            d[b as usize] + counts[b as usize] - d[a as usize],
        )
    };
    let f = Fold::new(n);
    let rounds = f.p.trailing_zeros() as usize;
    let mut s = Schedule::with_rounds(rounds + 2);
    let mine = counts[me as usize];
    s.push(0, copy(input(0, mine), out(d[me as usize], mine)));
    if me < 2 * f.rem {
        let total = out(0, counts.iter().sum());
        if me.is_multiple_of(2) {
            s.push_data(0, send(me + 1, out(d[me as usize], mine)));
            s.push_data(rounds + 1, recv(me + 1, total));
        } else {
            s.push_data(0, recv(me - 1, range((me - 1, me - 1))));
            s.push_data(rounds + 1, send(me - 1, total));
        }
    }
    if let Some(new) = f.new_rank(me) {
        for k in 0..rounds {
            let size = 1u32 << k;
            let base = new & !(size - 1);
            let partner = new ^ size;
            let pbase = partner & !(size - 1);
            let span = |b: u32| (f.covers(b).0, f.covers(b + size - 1).1);
            s.push_data(k + 1, send(f.real(partner), range(span(base))));
            s.push_data(k + 1, recv(f.real(partner), range(span(pbase))));
        }
    }
    s
}

/// Allgather(v), Bruck: ceil(log2 n) rounds for any `n`, blocks rotated
/// so that each round sends one contiguous run, then put in rank order.
pub fn allgatherv_bruck(n: u32, me: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    // Scratch holds blocks of ranks me, me+1, ... in that order.
    let owner = |j: u32| ((me + j) % n) as usize;
    let at: Vec<usize> = (0..=n)
        .scan(0, |a, j| {
            let here = *a;
            if j < n {
                *a += counts[owner(j)];
            }
            Some(here)
        })
        .collect();
    let rounds = log2_ceil(n);
    let mut s = Schedule::with_rounds(rounds + 1);
    s.scratch = at[n as usize];
    s.push(
        0,
        copy(
            input(0, counts[me as usize]),
            scratch(0, counts[me as usize]),
        ),
    );
    for k in 0..rounds {
        let step = 1u32 << k;
        let blocks = step.min(n - step);
        s.push_data(
            k,
            send((me + n - step) % n, scratch(0, at[blocks as usize])),
        );
        let into = scratch(
            at[step as usize],
            at[(step + blocks) as usize] - at[step as usize],
        );
        s.push_data(k, recv((me + step) % n, into));
    }
    for j in 0..n {
        let o = owner(j);
        s.push(
            rounds,
            copy(scratch(at[j as usize], counts[o]), out(d[o], counts[o])),
        );
    }
    s
}

/// Alltoall(v), pairwise: n - 1 rounds, in round k sending to me + k and
/// receiving from me - k. `sends[r]` / `recvs[r]`: elements to / from `r`,
/// laid end to end in `Input` / `Output`.
pub fn alltoallv_pairwise(n: u32, me: u32, sends: &[usize], recvs: &[usize]) -> Schedule {
    let (sd, rd) = (displacements(sends), displacements(recvs));
    let m = me as usize;
    let mut s = Schedule::with_rounds(n as usize);
    s.push(0, copy(input(sd[m], sends[m]), out(rd[m], recvs[m])));
    for k in 1..n {
        let (to, from) = (((me + k) % n) as usize, ((me + n - k) % n) as usize);
        s.push_data(k as usize, send(to as u32, input(sd[to], sends[to])));
        s.push_data(k as usize, recv(from as u32, out(rd[from], recvs[from])));
    }
    s
}

/// Messages a linear alltoall(v) has out at once, each way (MPICH's
/// throttle, `MPIR_CVAR_ALLTOALL_THROTTLE`, is 32 as well): more would
/// post 2 (p - 1) operations at once, beyond what a provider's queues
/// take at thousands of ranks.
pub const LINEAR_WINDOW: u32 = 32;

/// Alltoall(v), linear: every message posted at once, in rounds of at
/// most [`LINEAR_WINDOW`] peers each way (distances 1 to 32, then 33 to
/// 64, ...): one round up to 33 ranks, ceil((n - 1) / 32) beyond.
pub fn alltoallv_linear(n: u32, me: u32, sends: &[usize], recvs: &[usize]) -> Schedule {
    let (sd, rd) = (displacements(sends), displacements(recvs));
    let m = me as usize;
    let mut s = Schedule::with_rounds(1);
    s.push(0, copy(input(sd[m], sends[m]), out(rd[m], recvs[m])));
    for k in 1..n {
        let round = ((k - 1) / LINEAR_WINDOW) as usize;
        let (to, from) = (((me + k) % n) as usize, ((me + n - k) % n) as usize);
        s.push_data(round, send(to as u32, input(sd[to], sends[to])));
        s.push_data(round, recv(from as u32, out(rd[from], recvs[from])));
    }
    s
}

/// Reduce-scatter, pairwise: n - 1 rounds in which each rank sends every
/// other its block, then combines the n contributions to its own block in
/// rank order (any operation). `counts[r]`: elements of rank `r`'s block
/// (blocks laid end to end in `Input`).
pub fn reduce_scatter_pairwise(n: u32, me: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let (m, c) = (me as usize, counts[me as usize]);
    let mut s = Schedule::with_rounds(n as usize + 1);
    s.scratch = c * n as usize;
    s.push(0, copy(input(d[m], c), scratch(m * c, c)));
    for k in 1..n {
        let (to, from) = (((me + k) % n) as usize, ((me + n - k) % n) as usize);
        s.push_data(k as usize, send(to as u32, input(d[to], counts[to])));
        s.push_data(k as usize, recv(from as u32, scratch(from * c, c)));
    }
    let last = n as usize;
    s.push(last, copy(scratch(0, c), out(0, c)));
    for r in 1..n as usize {
        s.push(
            last,
            Action::Reduce {
                from: scratch(r * c, c),
                into: out(0, c),
            },
        );
    }
    s
}

/// Reduce-scatter, ring: n - 1 rounds of one block each (bandwidth-bound).
/// *Commutative only.*
pub fn reduce_scatter_ring(n: u32, me: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let total: usize = counts.iter().sum();
    let blocks: Vec<(usize, usize)> = d.iter().copied().zip(counts.iter().copied()).collect();
    let mut s = Schedule::with_rounds(n as usize + 1);
    s.scratch = total;
    s.push(0, copy(input(0, total), scratch(0, total)));
    ring_reduce_scatter(&mut s, n, me, 1, Buf::Scratch, &blocks);
    let (at, c) = blocks[me as usize];
    s.push(n as usize, copy(scratch(at, c), out(0, c)));
    s
}

/// Reduce-scatter, recursive halving (any `n`, uneven blocks): a fold
/// round, log2 p rounds each halving the blocks a rank is responsible for
/// (sending the other half to its partner, combining the half it keeps),
/// then a round handing the folded ranks their blocks: ceil(log2 n) + 1
/// rounds, (n - 1) blocks moved. *Commutative only.*
pub fn reduce_scatter_halving(n: u32, me: u32, counts: &[usize]) -> Schedule {
    let d = displacements(counts);
    let total: usize = counts.iter().sum();
    let f = Fold::new(n);
    let levels = f.p.trailing_zeros() as usize;
    let mut s = Schedule::with_rounds(levels + 2);
    s.scratch = total;
    let all = scratch(0, total);
    s.push(0, copy(input(0, total), all));
    f.fold(&mut s, me, all, None);
    let last = levels + 1;
    let mine = (d[me as usize], counts[me as usize]);
    let Some(new) = f.new_rank(me) else {
        // Folded into me + 1, which hands back this rank's block.
        s.push_data(last, recv(me + 1, out(0, mine.1)));
        return s;
    };
    // New ranks lo..hi cover original ranks covers(lo).0 ..= covers(hi - 1).1.
    let blocks = |lo: u32, hi: u32| {
        let (first, end) = (f.covers(lo).0 as usize, f.covers(hi - 1).1 as usize);
        scratch(d[first], d[end] + counts[end] - d[first])
    };
    let blocks = |lo: u32, hi: u32| match lo < hi {
        true => blocks(lo, hi),
        false => scratch(0, 0),
    };
    f.recursive_halving(&mut s, new, &blocks);
    s.push(last, copy(scratch(mine.0, mine.1), out(0, mine.1)));
    let (first, _) = f.covers(new);
    if first != me {
        // The folded rank's block, reduced here.
        let theirs = (d[first as usize], counts[first as usize]);
        s.push_data(last, send(first, scratch(theirs.0, theirs.1)));
    }
    s
}

/// Alltoall, Bruck (every block `count` elements): the blocks rotated so
/// that block `i` goes `i` ranks on, then in round k every block whose
/// distance has bit k set goes 2^k ranks on, packed into one message;
/// then put in rank order. ceil(log2 n) rounds of about n / 2 blocks each
/// (latency-bound: for small blocks at many ranks).
pub fn alltoall_bruck(n: u32, me: u32, count: usize) -> Schedule {
    let rounds = log2_ceil(n);
    // Scratch: the n rotated blocks, then a pack and an unpack area of
    // half of them (rounded up).
    let half = n.div_ceil(2) as usize;
    let (pack, unpack) = (n as usize * count, (n as usize + half) * count);
    let mut s = Schedule::with_rounds(rounds + 1);
    s.scratch = (n as usize + 2 * half) * count;
    for i in 0..n as usize {
        let from = (i + me as usize) % n as usize;
        s.push(
            0,
            copy(input(from * count, count), scratch(i * count, count)),
        );
    }
    let moving = |k: usize| (0..n as usize).filter(move |i| i & (1 << k) != 0);
    for k in 0..rounds {
        if k > 0 {
            for (j, i) in moving(k - 1).enumerate() {
                s.push(
                    k,
                    copy(
                        scratch(unpack + j * count, count),
                        scratch(i * count, count),
                    ),
                );
            }
        }
        let m = moving(k).count() * count;
        for (j, i) in moving(k).enumerate() {
            s.push(
                k,
                copy(scratch(i * count, count), scratch(pack + j * count, count)),
            );
        }
        let step = 1u32 << k;
        s.push_data(k, send((me + step) % n, scratch(pack, m)));
        s.push_data(k, recv((me + n - step) % n, scratch(unpack, m)));
    }
    if rounds > 0 {
        for (j, i) in moving(rounds - 1).enumerate() {
            s.push(
                rounds,
                copy(
                    scratch(unpack + j * count, count),
                    scratch(i * count, count),
                ),
            );
        }
    }
    // Block i came from rank me - i.
    for i in 0..n as usize {
        let from = (me as usize + n as usize - i) % n as usize;
        s.push(
            rounds,
            copy(scratch(i * count, count), out(from * count, count)),
        );
    }
    s
}

/// The schedule of `algorithm` at rank `me` of `n` for a call of `count`
/// elements (a rank's block for gather, scatter, allgather, alltoall and
/// reduce_scatter, every block the same), root 0, a commutative
/// operation: what a model counts messages and rounds by. `None` for the
/// algorithms that are no schedule (shared memory, RMA).
pub fn uniform(algorithm: Algorithm, n: u32, me: u32, count: usize) -> Option<Schedule> {
    use crate::algorithm::{
        Allgather, Allreduce, Alltoall, Barrier, Bcast, Gather, Reduce, ReduceScatter, Scatter,
    };
    let counts = vec![count; n as usize];
    Some(match algorithm {
        Algorithm::Barrier(Barrier::Dissemination) => barrier_dissemination(n, me),
        Algorithm::Bcast(Bcast::Binomial) => bcast_binomial(n, me, 0, count),
        Algorithm::Bcast(Bcast::Linear) => bcast_linear(n, me, 0, count),
        Algorithm::Bcast(Bcast::ScatterAllgather) => bcast_scatter_allgather(n, me, 0, count),
        Algorithm::Bcast(Bcast::ScatterDoubling) => bcast_scatter_doubling(n, me, 0, count),
        Algorithm::Reduce(Reduce::Binomial) => reduce_binomial(n, me, 0, count, true),
        Algorithm::Reduce(Reduce::ReduceScatterGather) => reduce_scatter_gather(n, me, 0, count),
        Algorithm::Reduce(Reduce::Linear) => reduce_linear(n, me, 0, count),
        Algorithm::Allreduce(Allreduce::RecursiveDoubling) => {
            allreduce_recursive_doubling(n, me, count)
        }
        Algorithm::Allreduce(Allreduce::Rabenseifner) => allreduce_rabenseifner(n, me, count),
        Algorithm::Allreduce(Allreduce::Ring) => allreduce_ring(n, me, count),
        Algorithm::Gather(Gather::Binomial) => gatherv_binomial(n, me, 0, &counts),
        Algorithm::Gather(Gather::Linear) => gatherv_linear(n, me, 0, &counts),
        Algorithm::Scatter(Scatter::Binomial) => scatterv_binomial(n, me, 0, &counts),
        Algorithm::Scatter(Scatter::Linear) => scatterv_linear(n, me, 0, &counts),
        Algorithm::Allgather(Allgather::RecursiveDoubling) => {
            allgatherv_recursive_doubling(n, me, &counts)
        }
        Algorithm::Allgather(Allgather::Bruck) => allgatherv_bruck(n, me, &counts),
        Algorithm::Allgather(Allgather::Ring) => allgatherv_ring(n, me, &counts),
        Algorithm::Alltoall(Alltoall::Pairwise) => alltoallv_pairwise(n, me, &counts, &counts),
        Algorithm::Alltoall(Alltoall::Linear) => alltoallv_linear(n, me, &counts, &counts),
        Algorithm::Alltoall(Alltoall::Bruck) => alltoall_bruck(n, me, count),
        Algorithm::ReduceScatter(ReduceScatter::Pairwise) => {
            reduce_scatter_pairwise(n, me, &counts)
        }
        Algorithm::ReduceScatter(ReduceScatter::Ring) => reduce_scatter_ring(n, me, &counts),
        Algorithm::ReduceScatter(ReduceScatter::RecursiveHalving) => {
            reduce_scatter_halving(n, me, &counts)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Op, Reduce};
    use crate::schedule::{simulate, Buffers};

    /// An algorithm shaped by per-rank counts.
    type CountsAlg = fn(u32, u32, &[usize]) -> Schedule;
    /// A rooted algorithm shaped by per-rank counts.
    type CountsRootAlg = fn(u32, u32, u32, &[usize]) -> Schedule;
    /// An algorithm shaped by send and receive counts.
    type MatrixAlg = fn(u32, u32, &[usize], &[usize]) -> Schedule;

    /// A deterministic pseudo-random stream.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, below: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % below.max(1)
        }
    }

    /// 2x2 integer matrices, multiplied: associative, not commutative.
    fn matrices() -> Op<i64> {
        Op::user(
            |inout: &mut [i64], input: &[i64]| {
                for (m, n) in inout.chunks_mut(4).zip(input.chunks(4)) {
                    let (a, b, c, d) = (m[0], m[1], m[2], m[3]);
                    m[0] = a.wrapping_mul(n[0]).wrapping_add(b.wrapping_mul(n[2]));
                    m[1] = a.wrapping_mul(n[1]).wrapping_add(b.wrapping_mul(n[3]));
                    m[2] = c.wrapping_mul(n[0]).wrapping_add(d.wrapping_mul(n[2]));
                    m[3] = c.wrapping_mul(n[1]).wrapping_add(d.wrapping_mul(n[3]));
                }
            },
            false,
        )
    }

    fn ops() -> Vec<(Op<i64>, bool)> {
        vec![
            (Op::SUM, true),
            (Op::MAX, true),
            (Op::BXOR, true),
            (matrices(), false),
        ]
    }

    fn data(rng: &mut Lcg, len: usize) -> Vec<i64> {
        (0..len).map(|_| rng.next(7) as i64 - 3).collect()
    }

    /// Runs one algorithm on every rank; returns the outputs.
    fn run(
        n: u32,
        out_len: &[usize],
        inputs: Vec<Vec<i64>>,
        op: &Op<i64>,
        sched: impl Fn(u32) -> Schedule,
    ) -> Vec<Vec<i64>> {
        let schedules: Vec<Schedule> = (0..n).map(&sched).collect();
        let mut bufs: Vec<Buffers<i64>> = inputs
            .into_iter()
            .zip(out_len)
            .map(|(input, &len)| Buffers {
                input,
                output: vec![-99; len],
                scratch: Vec::new(),
            })
            .collect();
        simulate(&schedules, &mut bufs, op).unwrap_or_else(|e| panic!("n = {n}: {e}"));
        bufs.into_iter().map(|b| b.output).collect()
    }

    /// The serial reduction of `inputs` in rank order.
    fn reduce(inputs: &[Vec<i64>], op: &Op<i64>) -> Vec<i64> {
        let mut acc = inputs[0].clone();
        for x in &inputs[1..] {
            op.apply(&mut acc, x);
        }
        acc
    }

    #[test]
    fn barrier_and_bcasts() {
        let mut rng = Lcg(1);
        for n in 1..=9u32 {
            let none = Op::SUM;
            run(
                n,
                &vec![0; n as usize],
                vec![Vec::new(); n as usize],
                &none,
                |me| barrier_dissemination(n, me),
            );
            for root in 0..n {
                let count = rng.next(40) as usize;
                let payload = data(&mut rng, count);
                for alg in 0..4 {
                    let schedules: Vec<Schedule> = (0..n)
                        .map(|me| match alg {
                            0 => bcast_binomial(n, me, root, count),
                            1 => bcast_linear(n, me, root, count),
                            2 => bcast_scatter_allgather(n, me, root, count),
                            _ => bcast_scatter_doubling(n, me, root, count),
                        })
                        .collect();
                    let mut bufs: Vec<Buffers<i64>> = (0..n)
                        .map(|r| Buffers {
                            input: Vec::new(),
                            output: if r == root {
                                payload.clone()
                            } else {
                                vec![-99; count]
                            },
                            scratch: Vec::new(),
                        })
                        .collect();
                    simulate(&schedules, &mut bufs, &none).unwrap();
                    assert!(
                        bufs.iter().all(|b| b.output == payload),
                        "bcast {alg} n {n} root {root}"
                    );
                }
            }
        }
    }

    #[test]
    fn reductions_match_the_serial_reference() {
        let mut rng = Lcg(2);
        for n in 1..=9u32 {
            for (op, commutative) in ops() {
                let count = 4 * rng.next(9) as usize; // whole matrices, zero included
                let inputs: Vec<Vec<i64>> = (0..n).map(|_| data(&mut rng, count)).collect();
                let want = reduce(&inputs, &op);
                let outs = vec![count; n as usize];
                for root in 0..n {
                    let got = run(n, &outs, inputs.clone(), &op, |me| {
                        reduce_binomial(n, me, root, count, commutative)
                    });
                    assert_eq!(
                        got[root as usize], want,
                        "reduce binomial n {n} root {root}"
                    );
                    let got = run(n, &outs, inputs.clone(), &op, |me| {
                        reduce_linear(n, me, root, count)
                    });
                    assert_eq!(got[root as usize], want, "reduce linear n {n} root {root}");
                    if commutative {
                        let got = run(n, &outs, inputs.clone(), &op, |me| {
                            reduce_scatter_gather(n, me, root, count)
                        });
                        assert_eq!(got[root as usize], want, "reduce rsg n {n} root {root}");
                    }
                }
                let got = run(n, &outs, inputs.clone(), &op, |me| {
                    allreduce_recursive_doubling(n, me, count)
                });
                assert!(got.iter().all(|g| *g == want), "allreduce rd n {n} {op:?}");
                if commutative {
                    let got = run(n, &outs, inputs.clone(), &op, |me| {
                        allreduce_ring(n, me, count)
                    });
                    assert!(
                        got.iter().all(|g| *g == want),
                        "allreduce ring n {n} {op:?}"
                    );
                    let got = run(n, &outs, inputs.clone(), &op, |me| {
                        allreduce_rabenseifner(n, me, count)
                    });
                    assert!(
                        got.iter().all(|g| *g == want),
                        "allreduce rabenseifner n {n} {op:?}"
                    );
                }
                // Reduce-scatter with uneven (whole-matrix) blocks.
                let counts: Vec<usize> = (0..n).map(|_| 4 * rng.next(3) as usize).collect();
                let total: usize = counts.iter().sum();
                let inputs: Vec<Vec<i64>> = (0..n).map(|_| data(&mut rng, total)).collect();
                let full = reduce(&inputs, &op);
                let d = displacements(&counts);
                let mut algs: Vec<CountsAlg> = vec![reduce_scatter_pairwise];
                if commutative {
                    algs.push(reduce_scatter_ring);
                    algs.push(reduce_scatter_halving);
                }
                for alg in algs {
                    let got = run(n, &counts, inputs.clone(), &op, |me| alg(n, me, &counts));
                    for r in 0..n as usize {
                        assert_eq!(
                            got[r],
                            full[d[r]..d[r] + counts[r]],
                            "reduce_scatter n {n} rank {r} {op:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn gathers_scatters_allgathers_and_alltoalls_move_every_block() {
        let mut rng = Lcg(3);
        let none = Op::SUM;
        for n in 1..=9u32 {
            let counts: Vec<usize> = (0..n).map(|_| rng.next(5) as usize).collect();
            let total: usize = counts.iter().sum();
            let inputs: Vec<Vec<i64>> = counts.iter().map(|&c| data(&mut rng, c)).collect();
            let concat: Vec<i64> = inputs.concat();
            for root in 0..n {
                let mut outs = vec![0; n as usize];
                outs[root as usize] = total;
                let gathers: [CountsRootAlg; 2] = [gatherv_linear, gatherv_binomial];
                for alg in gathers {
                    let got = run(n, &outs, inputs.clone(), &none, |me| {
                        alg(n, me, root, &counts)
                    });
                    assert_eq!(got[root as usize], concat, "gatherv n {n} root {root}");
                }
                let scatters: [CountsRootAlg; 2] = [scatterv_linear, scatterv_binomial];
                for alg in scatters {
                    let mut ins = vec![Vec::new(); n as usize];
                    ins[root as usize] = concat.clone();
                    let got = run(n, &counts, ins, &none, |me| alg(n, me, root, &counts));
                    assert_eq!(got, inputs, "scatterv n {n} root {root}");
                }
            }
            let algs: [CountsAlg; 3] = [
                allgatherv_ring,
                allgatherv_recursive_doubling,
                allgatherv_bruck,
            ];
            for (i, alg) in algs.iter().enumerate() {
                let got = run(n, &vec![total; n as usize], inputs.clone(), &none, |me| {
                    alg(n, me, &counts)
                });
                assert!(
                    got.iter().all(|g| *g == concat),
                    "allgatherv {i} n {n}: {got:?}"
                );
            }
            // Alltoallv: rank a sends m[a][b] elements to b.
            let m: Vec<Vec<usize>> = (0..n)
                .map(|_| (0..n).map(|_| rng.next(4) as usize).collect())
                .collect();
            let recvs = |b: usize| (0..n as usize).map(|a| m[a][b]).collect::<Vec<_>>();
            let inputs: Vec<Vec<i64>> = m
                .iter()
                .map(|row| data(&mut rng, row.iter().sum()))
                .collect();
            // Bruck: every block the same length.
            let c = rng.next(3) as usize;
            let ins: Vec<Vec<i64>> = (0..n).map(|_| data(&mut rng, c * n as usize)).collect();
            let got = run(
                n,
                &vec![c * n as usize; n as usize],
                ins.clone(),
                &none,
                |me| alltoall_bruck(n, me, c),
            );
            for b in 0..n as usize {
                let want: Vec<i64> = (0..n as usize)
                    .flat_map(|a| ins[a][b * c..(b + 1) * c].to_vec())
                    .collect();
                assert_eq!(got[b], want, "alltoall bruck n {n} rank {b}");
            }
            let algs: [MatrixAlg; 2] = [alltoallv_pairwise, alltoallv_linear];
            for alg in algs {
                let outs: Vec<usize> = (0..n as usize).map(|b| recvs(b).iter().sum()).collect();
                let got = run(n, &outs, inputs.clone(), &none, |me| {
                    alg(n, me, &m[me as usize], &recvs(me as usize))
                });
                for b in 0..n as usize {
                    let want: Vec<i64> = (0..n as usize)
                        .flat_map(|a| {
                            let at: usize = m[a][..b].iter().sum();
                            inputs[a][at..at + m[a][b]].to_vec()
                        })
                        .collect();
                    assert_eq!(got[b], want, "alltoallv n {n} rank {b}");
                }
            }
        }
    }

    #[test]
    fn empty_blocks_send_nothing_and_linear_posting_is_windowed() {
        // An alltoallv with blocks for the two neighbours only.
        let n = 64u32;
        for me in 0..n {
            let mut sends = vec![0; n as usize];
            sends[((me + 1) % n) as usize] = 3;
            sends[((me + n - 1) % n) as usize] = 3;
            let algs: [MatrixAlg; 2] = [alltoallv_pairwise, alltoallv_linear];
            for alg in algs {
                let sent = alg(n, me, &sends, &sends)
                    .messages()
                    .filter(|m| m.3)
                    .count();
                assert_eq!(sent, 2, "rank {me}");
            }
        }
        // Rooted linear algorithms: at most 32 peers a round at the root,
        // and right at 70 ranks, whichever the root.
        let n = 70u32;
        for root in [0, 33, 69] {
            let s = bcast_linear(n, root, root, 1);
            assert_eq!(s.rounds.len(), 3);
            assert!(s.rounds.iter().all(|r| r.len() <= LINEAR_WINDOW as usize));
            let payload = vec![7i64];
            let mut bufs: Vec<Buffers<i64>> = (0..n)
                .map(|r| Buffers {
                    input: vec![i64::from(r)],
                    output: if r == root { payload.clone() } else { vec![0] },
                    scratch: Vec::new(),
                })
                .collect();
            let scheds: Vec<Schedule> = (0..n).map(|me| bcast_linear(n, me, root, 1)).collect();
            simulate(&scheds, &mut bufs, &Op::SUM).unwrap();
            assert!(bufs.iter().all(|b| b.output == payload));
            let inputs: Vec<Vec<i64>> = (0..n).map(|r| vec![i64::from(r)]).collect();
            let got = run(n, &vec![1; n as usize], inputs.clone(), &Op::SUM, |me| {
                reduce_linear(n, me, root, 1)
            });
            assert_eq!(got[root as usize], vec![i64::from(n * (n - 1) / 2)]);
            let ones = vec![1; n as usize];
            let mut outs = vec![0; n as usize];
            outs[root as usize] = n as usize;
            let got = run(n, &outs, inputs.clone(), &Op::SUM, |me| {
                gatherv_linear(n, me, root, &ones)
            });
            assert_eq!(got[root as usize], (0..i64::from(n)).collect::<Vec<_>>());
        }
        // 99 peers: four rounds of at most 32 each way, every block moved.
        let n = 100u32;
        let s = alltoallv_linear(n, 5, &vec![1; 100], &vec![1; 100]);
        assert_eq!(s.rounds.len(), 4);
        for round in &s.rounds {
            let sends = round.iter().filter(|a| matches!(a, Action::Send { .. }));
            assert!(sends.count() <= LINEAR_WINDOW as usize);
        }
        let ins: Vec<Vec<i64>> = (0..n)
            .map(|r| (0..i64::from(n)).map(|i| i64::from(r) * 1000 + i).collect())
            .collect();
        let ones = vec![1; n as usize];
        let got = run(
            n,
            &ones.iter().map(|_| n as usize).collect::<Vec<_>>(),
            ins,
            &Op::SUM,
            |me| alltoallv_linear(n, me, &ones, &ones),
        );
        for (b, g) in got.iter().enumerate() {
            let want: Vec<i64> = (0..i64::from(n)).map(|a| a * 1000 + b as i64).collect();
            assert_eq!(*g, want, "rank {b}");
        }
    }

    #[test]
    fn rounds_are_logarithmic_where_promised() {
        for n in [2u32, 5, 8, 13] {
            let l = log2_ceil(n);
            assert_eq!(barrier_dissemination(n, 0).rounds.len(), l);
            assert!(bcast_binomial(n, 0, 0, 8).rounds.len() <= l);
            assert!(allgatherv_bruck(n, 1, &vec![1; n as usize]).rounds.len() <= l + 1);
            assert!(allreduce_recursive_doubling(n, 1, 8).rounds.len() <= l + 2);
            assert!(alltoall_bruck(n, 1, 2).rounds.len() <= l + 1);
            assert!(bcast_scatter_doubling(n, 1, 0, 64).rounds.len() <= 2 * l + 3);
            assert!(
                reduce_scatter_halving(n, 1, &vec![2; n as usize])
                    .rounds
                    .len()
                    <= l + 2
            );
        }
        assert_eq!(block(10, 3, 0), (0, 4));
        assert_eq!(block(10, 3, 2), (7, 3));
        assert_eq!(block(0, 3, 1), (0, 0));
    }
}
