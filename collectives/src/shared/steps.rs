//! Each collective's steps through shared memory, planned one at a time
//! ([`Planner`]): what a member reads, combines and copies in step k of
//! its call, and what it publishes. Arithmetic on the call's shape and
//! buffers, and on what [`HostMemory`] says of the host (its pieces, what
//! it lends); nothing moves here.

use std::marker::PhantomData;

use super::*;

/// What step `k` of one member's call is planned from, and the list its
/// operations go into.
pub(super) struct Planner<'a, T> {
    shared: &'a HostMemory,
    ops: &'a mut Vec<Act>,
    k: usize,
    /// Elements of the input and output.
    input: usize,
    output: usize,
    /// Elements per piece.
    per: usize,
    /// Whether the shape's peers read pieces where they lie (the
    /// member's lent memory) from [`LEND`] bytes.
    lendable: bool,
    /// Whether a reduction combines its left operand in place.
    left_in_place: bool,
    _t: PhantomData<T>,
}

impl<'a, T> Planner<'a, T> {
    /// The planner of step `k` of a call of `shape` over `input` and
    /// `output` elements, into `ops` (emptied).
    pub(super) fn new(
        shared: &'a HostMemory,
        shape: &Shape,
        k: usize,
        (input, output): (usize, usize),
        ops: &'a mut Vec<Act>,
    ) -> Planner<'a, T> {
        ops.clear();
        let piece_bytes = shared.piece_bytes::<T>(shape, input, output);
        Planner {
            shared,
            ops,
            k,
            input,
            output,
            per: (piece_bytes / size_of::<T>().max(1)).max(1),
            lendable: lendable(shape),
            left_in_place: matches!(
                shape,
                Shape::Reduce {
                    left_in_place: true,
                    ..
                }
            ),
            _t: PhantomData,
        }
    }

    fn me(&self) -> u32 {
        self.shared.me
    }

    fn size(&self) -> usize {
        size_of::<T>()
    }

    /// The members but this one.
    fn others(&self) -> impl Iterator<Item = u32> + Clone {
        let (me, n) = (self.shared.me, self.shared.n);
        (0..n).filter(move |&p| p != me)
    }

    /// Pieces of `len` elements.
    fn pieces(&self, len: usize) -> usize {
        len.div_ceil(self.per)
    }

    /// Piece `k` of `len` elements.
    fn piece(&self, len: usize, k: usize) -> Range<usize> {
        (k * self.per).min(len)..((k + 1) * self.per).min(len)
    }

    /// Where a peer's piece of `elements` lies ([`place`]).
    fn place(&self, elements: usize) -> Place {
        place::<T>(self.lendable, self.shared, elements)
    }

    /// Reads of every member's piece `from` (this member's from its
    /// input; a peer's at `at` of what it published, in `from_place`)
    /// into `into`, combined in rank order (see `fold_order`).
    fn fold(&mut self, at: usize, from_place: Place, from: Range<usize>, into: Range<usize>) {
        let (me, whole) = (self.me(), self.input * self.size());
        let order = fold_order(self.shared.n, me, self.left_in_place);
        for (i, p) in order.enumerate() {
            let combine = i > 0;
            self.ops.push(if p == me && p < i as u32 {
                Act::LocalFirst {
                    from: from.clone(),
                    into: into.clone(),
                }
            } else if p == me {
                Act::Local {
                    from: from.clone(),
                    into: into.clone(),
                    combine,
                }
            } else {
                Act::Read {
                    peer: p,
                    at,
                    into: into.clone(),
                    combine,
                    place: from_place,
                    whole,
                }
            });
        }
    }

    /// A barrier: one step, waiting for every peer's.
    pub(super) fn barrier(self) -> Option<Publish> {
        if self.k > 0 {
            return None;
        }
        let others = self.others();
        self.ops.extend(others.map(Act::Wait));
        Some(Publish::Nothing)
    }

    /// A broadcast from `root`, a piece a step.
    pub(super) fn bcast(self, root: u32) -> Option<Publish> {
        if self.k >= self.pieces(self.output) {
            return None;
        }
        let range = self.piece(self.output, self.k);
        if self.me() == root {
            return Some(Publish::Output(range));
        }
        let (place, whole) = (self.place(range.len()), self.output * self.size());
        self.ops.push(Act::Read {
            peer: root,
            at: 0,
            place,
            into: range,
            combine: false,
            whole,
        });
        Some(Publish::Nothing)
    }

    /// A reduction to `root` (or an allreduce) split among the members:
    /// in step k < C every member lends its input and reduces its block
    /// of chunk k (into its output, or its scratch off the root of a
    /// reduce), and publishes its reduced block of chunk k - 1, which the
    /// members that want it read.
    pub(super) fn reduce_split(mut self, root: Option<u32>) -> Option<Publish> {
        let (k, me, size) = (self.k, self.me(), self.size());
        let (sub, steps) = split_plan(self.input, self.shared.n, size);
        if k > steps {
            return None;
        }
        let reads = root.is_none_or(|r| r == me);
        if k > 0 && reads {
            for p in self.others() {
                let r = sub(k - 1, p);
                if !r.is_empty() {
                    self.ops.push(Act::Read {
                        peer: p,
                        at: 0,
                        into: r.clone(),
                        combine: false,
                        place: HostMemory::unlent::<T>(r.len()),
                        whole: self.input * size,
                    });
                }
            }
        }
        // A member that does not read accumulates (see
        // `Run::accumulator`): its blocks go at the start.
        let at_home = |r: Range<usize>| if reads { r } else { 0..r.len() };
        let reduced = (k > 0 && root != Some(me))
            .then(|| sub(k - 1, me))
            .filter(|r| !r.is_empty())
            .map(at_home);
        if k < steps {
            let mine = sub(k, me);
            if !mine.is_empty() {
                let at = mine.start * size;
                self.fold(at, Place::Lent, mine.clone(), at_home(mine));
            }
            return Some(Publish::Split(reduced));
        }
        Some(reduced.map_or(Publish::Nothing, Publish::Reduced))
    }

    /// A reduction to `root` (or an allreduce) a piece a step, which the
    /// members that want it combine from every member's.
    pub(super) fn reduce_pieces(mut self, root: Option<u32>) -> Option<Publish> {
        if self.k >= self.pieces(self.input) {
            return None;
        }
        let range = self.piece(self.input, self.k);
        if root.is_none_or(|r| r == self.me()) {
            let place = self.place(range.len());
            self.fold(0, place, range.clone(), range.clone());
        }
        Some(Publish::Input(range))
    }

    /// A gatherv of `counts` to `root`, or an allgatherv (`None`).
    pub(super) fn gather(self, root: Option<u32>, counts: &[usize]) -> Option<Publish> {
        let most = counts.iter().copied().max().unwrap_or(0);
        if self.k >= self.pieces(most) {
            return None;
        }
        let (me, size) = (self.me(), self.size());
        if root.is_none() && self.shared.gathers_whole::<T>(counts) {
            let total = counts.iter().sum::<usize>() * size;
            return Some(match total >= PUSH_FROM {
                true => self.push_whole(counts, total),
                false => self.read_whole(counts),
            });
        }
        let at = displacements(counts);
        let range = self.piece(self.input, self.k);
        if root.is_none_or(|r| r == me) {
            if self.k == 0 {
                let into = at[me as usize]..at[me as usize] + self.input;
                self.ops.push(Act::Local {
                    from: 0..self.input,
                    into,
                    combine: false,
                });
            }
            for p in self.others() {
                let count = counts[p as usize];
                if self.k >= self.pieces(count) {
                    continue;
                }
                let r = self.piece(count, self.k);
                let start = at[p as usize] + r.start;
                let place = self.place(r.len());
                self.ops.push(Act::Read {
                    peer: p,
                    at: 0,
                    into: start..start + r.len(),
                    combine: false,
                    place,
                    whole: count * size,
                });
            }
        }
        Some(Publish::Input(range))
    }

    /// An allgatherv in one step: every member lends its output, then
    /// copies its own block and writes it into its peers' outputs, in
    /// turns of `PUSH_TURN` bytes.
    fn push_whole(self, counts: &[usize], total: usize) -> Publish {
        let (me, size, input) = (self.me(), self.size(), self.input);
        let mine = displacements(counts)[me as usize];
        let push = |peer: u32, from: Range<usize>| Act::Push {
            peer,
            at: (mine + from.start) * size,
            from,
            whole: counts[peer as usize] * size,
            total,
        };
        let per = (PUSH_TURN / size).max(1);
        let others = self.others();
        for start in (0..input).step_by(per) {
            let from = start..(start + per).min(input);
            self.ops.push(Act::Uncached {
                from: from.clone(),
                into: mine + from.start..mine + from.end,
            });
            self.ops
                .extend(others.clone().map(|p| push(p, from.clone())));
        }
        Publish::Destination
    }

    /// An allgatherv in one step: every member copies its own block and
    /// reads its peers' whole.
    fn read_whole(self, counts: &[usize]) -> Publish {
        let (me, n, size) = (self.me(), self.shared.n, self.size());
        let at = displacements(counts);
        for p in (0..n).map(|i| (me + i) % n) {
            let into = at[p as usize]..at[p as usize] + counts[p as usize];
            self.ops.push(if p == me {
                Act::Local {
                    from: 0..self.input,
                    into,
                    combine: false,
                }
            } else {
                Act::Read {
                    peer: p,
                    at: 0,
                    into,
                    combine: false,
                    place: Place::Lent,
                    whole: counts[p as usize] * size,
                }
            });
        }
        Publish::Input(self.piece(self.input, self.k))
    }

    /// A scatterv of `counts` from `root`: the root publishes what its
    /// peers read (`scattered`), a piece a step, and copies its own block
    /// at its last step, while they read the last piece.
    pub(super) fn scatter(self, root: u32, counts: &[usize]) -> Option<Publish> {
        let (k, me, size) = (self.k, self.me(), self.size());
        let span = scattered(counts, root);
        let steps = (self.pieces(span.len())).max(usize::from(counts[root as usize] > 0));
        if k >= steps {
            return None;
        }
        let at = displacements(counts);
        let mine = at[me as usize]..at[me as usize] + counts[me as usize];
        let within = self.piece(span.len(), k);
        let range = span.start + within.start..span.start + within.end;
        if me == root {
            if k + 1 == steps {
                self.ops.push(Act::Local {
                    from: mine.clone(),
                    into: 0..mine.len(),
                    combine: false,
                });
            }
            return Some(Publish::Input(range));
        }
        let (lo, hi) = (range.start.max(mine.start), range.end.min(mine.end));
        if lo < hi {
            let place = self.place(range.len());
            self.ops.push(Act::Read {
                peer: root,
                at: (lo - range.start) * size,
                into: lo - mine.start..hi - mine.start,
                combine: false,
                place,
                whole: counts.iter().sum::<usize>() * size,
            });
        }
        Some(Publish::Nothing)
    }

    /// An alltoallv of `sends` and `recvs`: step 0 copies this member's
    /// own block and publishes its counts (which `counts` keeps, every
    /// member's once read), with its input beside them where it fits;
    /// the inputs that did not fit go in later steps, a piece of a cell
    /// each.
    pub(super) fn alltoall(
        self,
        (sends, recvs): (&[usize], &[usize]),
        counts: &mut Vec<Vec<u64>>,
    ) -> Option<Publish> {
        let (k, me, n, size) = (self.k, self.me(), self.shared.n, self.size());
        let into = displacements(recvs);
        if k == 0 {
            let own = displacements(sends)[me as usize];
            let len = sends[me as usize].min(recvs[me as usize]);
            self.ops.push(Act::Local {
                from: own..own + len,
                into: into[me as usize]..into[me as usize] + len,
                combine: false,
            });
            *counts = vec![Vec::new(); n as usize];
            counts[me as usize] = sends.iter().map(|&c| c as u64).collect();
            let others = self.others();
            self.ops.extend(others.map(|peer| Act::Counts {
                peer,
                into: into[peer as usize]..into[peer as usize] + recvs[peer as usize],
            }));
            return Some(Publish::Counts);
        }
        let late = |p: u32| {
            let total = counts[p as usize].iter().sum::<u64>() as usize;
            (self.shared.beside_counts(total * size).is_none()).then_some(total)
        };
        let longest = (0..n).filter_map(late).max().unwrap_or(0);
        let j = k - 1;
        if j >= self.pieces(longest) {
            return None;
        }
        let mut reads = Vec::new();
        for p in self.others() {
            let Some(total) = late(p) else { continue };
            // Where p's block for this member starts in p's input.
            let theirs = &counts[p as usize];
            let from = theirs[..me as usize].iter().sum::<u64>() as usize;
            let range = self.piece(total, j);
            let block = from..from + recvs[p as usize];
            let (lo, hi) = (range.start.max(block.start), range.end.min(block.end));
            if lo < hi {
                let to = into[p as usize] + (lo - block.start);
                reads.push(Act::Read {
                    peer: p,
                    at: (lo - range.start) * size,
                    into: to..to + (hi - lo),
                    combine: false,
                    place: self.place(range.len()),
                    whole: total * size,
                });
            }
        }
        let publish = match late(me) {
            Some(_) => Publish::Input(self.piece(self.input, j)),
            None => Publish::Nothing,
        };
        self.ops.extend(reads);
        Some(publish)
    }

    /// A reduce-scatter of blocks of `counts` with the input lent whole:
    /// one step, each member reading its block from every peer (a piece
    /// at a time per step would have the members read their blocks one
    /// after the other).
    pub(super) fn reduce_scatter_whole(mut self, counts: &[usize]) -> Option<Publish> {
        if self.k > 0 {
            return None;
        }
        let at = displacements(counts)[self.me() as usize];
        let mine = at..at + counts[self.me() as usize];
        for c in chunks(mine, self.per) {
            let into = c.start - at..c.end - at;
            self.fold(c.start * self.size(), Place::Lent, c, into);
        }
        Some(Publish::Input(0..self.input))
    }

    /// A reduce-scatter of blocks of `counts`, a piece of the input a
    /// step, of which each member combines what falls in its block.
    pub(super) fn reduce_scatter_pieces(mut self, counts: &[usize]) -> Option<Publish> {
        if self.k >= self.pieces(self.input) {
            return None;
        }
        let at = displacements(counts);
        let me = self.me() as usize;
        let want = at[me]..at[me] + counts[me];
        let range = self.piece(self.input, self.k);
        let (lo, hi) = (range.start.max(want.start), range.end.min(want.end));
        if lo < hi {
            let bytes = (lo - range.start) * self.size();
            let from_place = self.place(range.len());
            self.fold(bytes, from_place, lo..hi, lo - want.start..hi - want.start);
        }
        Some(Publish::Input(range))
    }
}

/// Whether peers of a call of `shape` read a member's pieces where they
/// lie (its lent memory), as [`place`] decides.
pub(super) fn lendable(shape: &Shape) -> bool {
    match shape {
        Shape::Reduce { root, .. } => root.is_none(),
        Shape::Alltoall { .. }
        | Shape::ReduceScatter { .. }
        | Shape::Scatter { .. }
        | Shape::Gather { .. } => true,
        Shape::Barrier | Shape::Bcast { .. } => false,
    }
}

/// Where a piece of `elements` of `T` is published: the rule publishers
/// and readers of a call apply alike. Small pieces go inline; large ones
/// (from [`LEND`] bytes, where the host maps peers' memory) are lent,
/// except a broadcast's and a reduction's to one root (`lendable` is
/// false): the publishers' copies into cells then overlap with the root's
/// reading and combining, and a broadcast's readers take the root's
/// pieces from the shared cache. A lent piece is read at the same speed
/// in both of the machine's modes, a cell's are not (measurements:
/// `docs/measurements.md`, "Gathers and scatters lent").
pub(super) fn place<T>(lendable: bool, shared: &HostMemory, elements: usize) -> Place {
    let bytes = elements * size_of::<T>();
    if lendable && shared.cma && bytes >= LEND {
        Place::Lent
    } else {
        HostMemory::unlent::<T>(elements)
    }
}
