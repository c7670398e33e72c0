//! The plans' vocabulary and arithmetic, pure: how a contribution is cut
//! into pieces, how steps are numbered and placed in cells, what a step
//! publishes and does, and the words that stamp a publication.

use super::*;

/// What a quick reduction combines a peer's piece through, a part at a
/// time (aligned for any element type up to 16 bytes).
pub(super) struct Spill(pub(super) [u128; 256]);

impl Default for Spill {
    fn default() -> Spill {
        Spill([0; 256])
    }
}

/// The order in which member `me` of `n` takes the members' pieces of a
/// reduction: the first is written, each other combined in. Member 0
/// takes member 1's piece first when the operation can combine its left
/// operand in place, then combines its own in as the left operand: the
/// result is rank order's to the bit, and member 0 reads its peer's piece
/// straight into its output instead of first copying its own there.
pub(super) fn fold_order(n: u32, me: u32, left_in_place: bool) -> impl Iterator<Item = u32> {
    let swap = left_in_place && me == 0 && n > 1;
    (0..n).map(move |i| if swap && i < 2 { 1 - i } else { i })
}

/// Bytes of the pieces of a broadcast or a reduction to one root up to a
/// cell ([`piece_of`]): readers copy or combine one while the root (the
/// peers) write the next. Each piece is a handover, dearer on these VMs
/// than copying a few KiB: 32 KiB beat 2 KiB (the earlier rule, tuned on
/// one machine) from 4 KiB on an AMD EPYC VM in both of its speeds, tied
/// with 8 KiB and beat 128 KiB; an Intel Xeon VM had measured 2 KiB the
/// slowest too. Where the job's ranks outnumber the cores, fewer steps
/// win as well (measurements: `docs/measurements.md`, "Pieces").
pub(super) const PIECE: usize = 32 << 10;

/// Bytes of the pieces of a broadcast or a reduction to one root of
/// `bytes` per member: [`PIECE`] up to a cell; above, cells (at 2 MiB
/// and 32 MiB neither wins in both of the machine's speeds, and cells
/// stay).
pub(super) fn piece_of(bytes: usize) -> usize {
    if bytes > CELL {
        CELL
    } else {
        PIECE
    }
}

/// Whether member `me` publishes its own contribution in the steps of a
/// quick call of `shape` ([`HostMemory::quick`]): a broadcast's root, and
/// every member of a reduction but its root (which reads the others'
/// pieces; nobody reads its own, so it neither copies it nor waits for a
/// cell). A barrier publishes nothing.
pub(super) fn quick_publishes(shape: &Shape, me: u32) -> bool {
    match shape {
        Shape::Bcast { root } => *root == me,
        Shape::Reduce { root, .. } => *root != Some(me),
        _ => false,
    }
}

/// Member `p`'s block of a chunk of `len` elements of `size` bytes of a
/// split reduction ([`split_plan`]) among `n` members: equal blocks in
/// rank order, each a whole number of cache lines long but the last
/// (which may be short or empty).
pub(super) fn split_block(len: usize, n: u32, size: usize, p: u32) -> Range<usize> {
    let align = (64 / size.max(1)).max(1);
    let per = len.div_ceil(n as usize).div_ceil(align) * align;
    (p as usize * per).min(len)..((p as usize + 1) * per).min(len)
}

/// How a split reduction ([`HostMemory::splits`]) of `len` elements of
/// `size` bytes among `n` members goes: in chunks of `n` cells, member
/// `m` reducing block `m` of each ([`split_block`]); the range of element
/// block `m` of chunk `c` covers, and the number of chunks.
pub(super) fn split_plan(
    len: usize,
    n: u32,
    size: usize,
) -> (impl Fn(usize, u32) -> Range<usize>, usize) {
    let chunk = n as usize * (CELL / size.max(1)).max(1);
    let sub = move |c: usize, m: u32| {
        let start = (c * chunk).min(len);
        let b = split_block((len - start).min(chunk), n, size, m);
        start + b.start..start + b.end
    };
    (sub, len.div_ceil(chunk))
}

/// Steps a call may take: call `c` (the Comm's number of it) numbers its
/// steps from `c * CALL_STEPS + 1`, so that every member starts each call
/// at the same step even where an earlier call failed on some members
/// after different numbers of steps (counts that do not match). 2^20
/// steps of a cell each are 256 GiB per member; 2^44 calls are 40 days
/// of calls 0.2 us apart.
pub(super) const CALL_STEPS: u64 = 1 << 20;

/// The number of step `k` (from 0) of call `call` ([`CALL_STEPS`]).
///
/// # Errors
/// [`Error::BadCall`] for a step past a call's steps, or past the
/// numbering.
pub(super) fn step_of(call: u64, k: usize) -> Result<u64, Error> {
    let k = k as u64;
    (call.checked_mul(CALL_STEPS))
        .filter(|_| k < CALL_STEPS)
        .and_then(|first| first.checked_add(k + 1))
        .ok_or_else(|| {
            Error::BadCall(format!(
                "a shared-memory call of more than {CALL_STEPS} steps, or past call 2^44"
            ))
        })
}

/// The cell of step `s` (from [`step_of`]): call `c`'s steps go round
/// the cells from cell `c % CELLS`, so that calls of one step each take
/// the cells in turn, as consecutive steps do (a member runs up to
/// `CELLS` such calls ahead of its slowest reader, and reads a counter of
/// each peer once in about `CELLS` calls, [`HostMemory::unreleased`]).
pub(super) fn cell_of(s: u64) -> usize {
    let n = s.saturating_sub(1);
    let (call, k) = (n / CALL_STEPS, n % CALL_STEPS);
    ((call + k) % CELLS) as usize
}

/// The byte offset of step `s`'s cell in a member's part.
pub(super) fn cell(s: u64) -> usize {
    DATA + cell_of(s) * CELL
}

/// The byte offset of the header of step `s`'s cell.
pub(super) fn header_of(s: u64) -> usize {
    // A pair of lines each: CPUs fetch lines in pairs, so a header polled
    // by a reader shares no pair with the next one being written, and its
    // second line (an inline piece's end) comes with its first.
    HEADERS + cell_of(s) * 128
}

/// Where a piece is published.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Place {
    /// In its cell's header (`INLINE` bytes at most).
    Inline,
    /// In its cell.
    Cell,
    /// Lent: left in the publisher's memory.
    Lent,
}

/// Where the first step of an alltoallv of `n` members puts a member's
/// input of `bytes` beside its counts: the place and the byte offset in
/// it, or `None` when it goes in the steps that follow. `cma` and
/// `own_cores` are [`HostMemory`]'s; every member applies it to every peer's
/// total alike (the counts say it).
pub(super) fn beside_counts(
    n: u32,
    bytes: usize,
    cma: bool,
    own_cores: bool,
) -> Option<(Place, usize)> {
    let counts = n as usize * 8;
    let room = if counts <= INLINE {
        0
    } else {
        counts.next_multiple_of(64)
    };
    let (fits, lend) = (room + bytes <= CELL, cma && bytes >= LEND);
    if counts + bytes <= INLINE {
        Some((Place::Inline, counts))
    } else if fits && (!lend || !own_cores) {
        Some((Place::Cell, room))
    } else if lend {
        Some((Place::Lent, 0))
    } else {
        None
    }
}

/// Where `n` alltoallv counts are published: never lent (they are a
/// temporary).
pub(super) fn counts_place(n: usize) -> Place {
    if n * 8 <= INLINE {
        Place::Inline
    } else {
        Place::Cell
    }
}

/// The byte offset of the descriptor of step `s`'s cell.
pub(super) fn descriptor_of(s: u64) -> usize {
    DESCRIPTORS + cell_of(s) * 32
}

/// What a step publishes.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Publish {
    Nothing,
    /// A range of the input (of the output for a broadcast's root).
    Input(Range<usize>),
    Output(Range<usize>),
    /// A range of what this member reduced (its output, or its scratch
    /// off the root of a reduce), for its peers (never lent: see
    /// [`HostMemory::splits`]).
    Reduced(Range<usize>),
    /// A split reduction's step: the input lent whole, and the range
    /// reduced in the step before, if any, as [`Publish::Reduced`].
    Split(Option<Range<usize>>),
    /// This member's alltoallv counts, and its input where
    /// [`beside_counts`] puts it.
    Counts,
    /// This member's output, lent for its peers to write their blocks
    /// into ([`Act::Push`]), with its input's bytes as its contribution.
    Destination,
}

/// One thing a step does after publishing (an act of the step).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Act {
    /// Wait for `peer` to arrive.
    Wait(u32),
    /// Read `into.len()` elements at byte `at` of `peer`'s cell into
    /// `into` of the output: a copy, or combined (`into = into op it`).
    Read {
        peer: u32,
        at: usize,
        into: Range<usize>,
        combine: bool,
        /// Where the peer published its piece (by [`Run::place`] of the
        /// piece's length).
        place: Place,
        /// The bytes of the peer's whole contribution to the call (what
        /// it published, checked).
        whole: usize,
    },
    /// The same from this member's own input range `from`.
    Local {
        from: Range<usize>,
        into: Range<usize>,
        combine: bool,
    },
    /// This member's input range `from` copied into `into` of the output
    /// with stores that bypass the cache ([`onesided_fabric::uncached`]):
    /// an allgather's own block where its output outgrows the cache.
    Uncached {
        from: Range<usize>,
        into: Range<usize>,
    },
    /// This member's input range `from` combined as the left operand
    /// (`into = from op into`).
    LocalFirst {
        from: Range<usize>,
        into: Range<usize>,
    },
    /// Read `peer`'s alltoallv counts, and its block for this member
    /// into `into` of the output where it lies beside them.
    Counts { peer: u32, into: Range<usize> },
    /// Check that `peer`'s whole contribution is `whole` bytes and, for
    /// a peer this member writes into, that its output is `total` bytes
    /// ([`check_first`] puts these before a step's operations).
    Check {
        peer: u32,
        whole: usize,
        total: Option<usize>,
    },
    /// Write this member's input range `from` at byte `at` of the output
    /// `peer` lent for writing ([`Publish::Destination`]), once its
    /// contribution proves `whole` bytes and its output `total`.
    Push {
        peer: u32,
        at: usize,
        from: Range<usize>,
        whole: usize,
        total: usize,
    },
}

/// Where each block of `counts` starts, laid end to end.
/// `range` in consecutive chunks of at most `per` elements.
pub(super) fn chunks(range: Range<usize>, per: usize) -> impl Iterator<Item = Range<usize>> {
    let end = range.end;
    range
        .step_by(per.max(1))
        .map(move |s| s..(s + per).min(end))
}

/// Puts, before a step's operations `ops`, a check of every peer whose
/// lent memory they read or write ([`Act::Check`]), where they touch
/// several peers' (3 members or more). A member whose counts disagree
/// with some peer's then fails before it touches any peer's memory: else
/// it could read the input of a peer that already failed and handed it
/// back to its caller (3 ranks, allreduce of 2.4 MB on one member against
/// 800 KB on the others: `Bad address` instead of the mismatch), or write
/// at an offset that counts it has not checked yet put wrong. Where a
/// step touches one peer's memory, its own operation checks it first.
pub(super) fn check_first(ops: &mut Vec<Act>) {
    let mut checks: Vec<Act> = Vec::new();
    for op in ops.iter() {
        let (peer, whole, total) = match *op {
            Act::Read {
                peer,
                whole,
                place: Place::Lent,
                ..
            } => (peer, whole, None),
            Act::Push {
                peer, whole, total, ..
            } => (peer, whole, Some(total)),
            _ => continue,
        };
        if !checks
            .iter()
            .any(|c| matches!(c, Act::Check { peer: p, .. } if *p == peer))
        {
            checks.push(Act::Check { peer, whole, total });
        }
    }
    if checks.len() > 1 {
        ops.splice(0..0, checks);
    }
}

/// The descriptor `[pid, address, bytes]` of what the member whose part
/// is `part` lent in step `s`.
///
/// # Errors
/// Window errors.
pub(super) fn lent(part: &Mapping, s: u64) -> Result<[u64; 3], Error> {
    let mut descriptor = [0u64; 3];
    part.read_bytes(descriptor_of(s), bytemuck::cast_slice_mut(&mut descriptor))?;
    Ok(descriptor)
}

/// Bits of a contribution's bytes in the word a member publishes at
/// [`WHOLE`] ([`stamped`]): up to 1 TiB.
pub(super) const WHOLE_BITS: u32 = 40;

/// The word at [`WHOLE`] of a publication of a contribution of `whole`
/// bytes in step `s`: the bytes, and above them the step's low 24 bits.
/// A member that gave a call up (a failure there, or a nonblocking call
/// dropped) may publish in its next call in the cell of a step its peers
/// still wait for in this one, and that cell's flag then passes their
/// step: with the step in the word, they fail ([`HostMemory::contribution`])
/// instead of reading the next call's publication as this one's, which a
/// contribution of the same size let them do. Steps 2^24 apart, 16
/// calls, share a stamp; a member runs at most [`CELLS`] calls ahead of
/// a peer.
///
/// # Errors
/// [`Error::BadCall`] for a contribution of 2^40 bytes or more.
pub(super) fn stamped(s: u64, whole: usize) -> Result<u64, Error> {
    if (whole as u64) >> WHOLE_BITS != 0 {
        return Err(Error::BadCall(format!(
            "a contribution of {whole} bytes (at most 2^{WHOLE_BITS} - 1 in shared memory)"
        )));
    }
    Ok(s << WHOLE_BITS | whole as u64)
}

/// The error of a member whose peer `member` gave the call up (out of
/// line, as [`mismatch`]).
#[cold]
#[inline(never)]
pub(super) fn gave_up(member: u32) -> Error {
    Error::BadCall(format!("group rank {member} gave the call up"))
}

/// The error of a member that expects `whole` bytes from `member`, which
/// published `theirs` (out of line: the check sits on every call's path).
#[cold]
#[inline(never)]
pub(super) fn mismatch(member: u32, theirs: u64, whole: usize) -> Error {
    Error::BadCall(format!(
        "group rank {member} passed {theirs} bytes where this member expects {whole}: \
         every member must pass matching counts"
    ))
}

/// The range of a scatter's input that its members other than `root`
/// read: from the first such member's block with elements to the end of
/// the last one's (empty when they read nothing).
pub(super) fn scattered(counts: &[usize], root: u32) -> Range<usize> {
    let at = displacements(counts);
    let blocks = (0..counts.len())
        .filter(|&p| p != root as usize && counts[p] > 0)
        .map(|p| at[p]..at[p] + counts[p]);
    blocks
        .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
        .unwrap_or(0..0)
}

pub(super) fn displacements(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let start = *at;
            *at += c;
            Some(start)
        })
        .collect()
}
