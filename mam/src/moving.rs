//! How the data moves: one registered array's pieces ([`Move`]), by an
//! alltoallv or by gets, at once or slice by slice ([`Cursor`], pure),
//! and the constant data's move in the background ([`Work`]), paced so
//! that the application keeps its core ([`SHARE`], [`pause`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use onesided_collectives::{Comm, Op, Run};
use onesided_fabric::cpu_time;
use onesided_rma::{Assert, Barrier, LockKind, Request, Window};

use crate::block::{self, Piece};
use crate::data::Column;
use crate::Error;

/// One registered array's move on this process: its old column (read by
/// the application meanwhile, so shared), its new one, and what this
/// process reads as a target and writes as a source (in elements).
pub(crate) struct Move {
    /// The registration's index.
    pub entry: usize,
    /// Bytes per element.
    pub size: u64,
    pub old: Arc<dyn Column>,
    pub new: Box<dyn Column>,
    pub reads: Vec<Piece>,
    pub writes: Vec<Piece>,
    /// Some(the new block's length, in elements) when `new` is this
    /// process's old column itself, taken from the application (blocking
    /// RMA moves, which read the sources' exposures, not their columns):
    /// [`Move::arrange`] keeps what it keeps where it stands.
    pub in_place: Option<u64>,
}

impl Move {
    /// Arranges a move in place ([`Move::in_place`]): the column takes
    /// the new block's length, and the piece this process (`me`) keeps
    /// moves within it to where the new block holds it, instead of a copy
    /// into a fresh column; it is read no more. A process whose new block
    /// starts where its old one did (rank 0, always) moves nothing.
    fn arrange(&mut self, me: u32) {
        let Some(len) = self.in_place else {
            return;
        };
        let (len, before) = (len as usize, self.new.bytes().len() / self.size as usize);
        if len > before {
            self.new.resize(len);
        }
        if let Some(p) = self.reads.iter().find(|p| p.peer == me) {
            let (from, to, count) = self.span(p);
            self.new.bytes_mut().copy_within(from..from + count, to);
        }
        if len < before {
            self.new.resize(len);
        }
        self.reads.retain(|p| p.peer != me);
    }

    /// The bytes of piece `p` in the old column (`from`) and in the new
    /// one (`to`), and their length.
    fn span(&self, p: &Piece) -> (usize, usize, usize) {
        let s = self.size;
        (
            (p.from * s) as usize,
            (p.to * s) as usize,
            (p.count * s) as usize,
        )
    }
}

/// Bytes `m` sends to and receives from each rank of a group of `n`.
fn exchanged(m: &Move, n: u32) -> (Vec<usize>, Vec<usize>) {
    let bytes = |pieces: &[Piece]| -> Vec<usize> {
        block::counts(pieces, n)
            .into_iter()
            .map(|c| (c * m.size) as usize)
            .collect()
    };
    (bytes(&m.writes), bytes(&m.reads))
}

/// COL: one alltoallv of `m`'s bytes over `comm`'s group.
pub(crate) fn by_alltoallv(comm: &Comm, m: &mut Move) -> Result<(), Error> {
    let (sends, recvs) = exchanged(m, comm.group().size());
    let input = sent(&m.writes, m.old.bytes(), m.size);
    // What arrives fills the new column from its start (a continuing
    // process's replicated copy receives nothing).
    let output = fresh(&mut m.new.bytes_mut()[..recvs.iter().sum::<usize>()]);
    Ok(comm.alltoallv(&input, &sends, output, &recvs)?)
}

/// Pieces at least this long are faulted in at once before they are
/// filled ([`fresh`]); below, the call costs about what it saves.
const POPULATE_LEAST: usize = 64 << 10;

/// `into`, part of a new column that nothing has written yet, faulted
/// in at once when it is long ([`onesided_fabric::pages`]), rather than
/// page fault by page fault as the copy into it goes.
fn fresh(into: &mut [u8]) -> &mut [u8] {
    if into.len() >= POPULATE_LEAST {
        onesided_fabric::pages::populate(into);
    }
    into
}

/// COL in rounds of at most [`SLICE`] bytes per pair, each followed by
/// a pause ([`Pacer`]) for `share` of the time: a helper thread that
/// leaves the application its core. Every member takes the same rounds:
/// as many as the largest pair needs when any member paces, else one.
pub(crate) fn by_alltoallv_paced(comm: &Comm, m: &mut Move, speed: &Speed) -> Result<(), Error> {
    let paced = speed.share() < 1.0;
    let rounds = (Rounds::agree(comm, std::slice::from_ref(m), SLICE, paced)?.pop())
        .ok_or_else(|| Error::State("internal: a move without rounds".into()))?;
    let whole = sent(&m.writes, m.old.bytes(), m.size);
    let mut pacer = Pacer::new(speed.share());
    for k in 0..rounds.count {
        pacer.share = speed.share();
        let begun = Instant::now();
        let (s, r) = rounds.sizes(k);
        let input = rounds.input(k, &whole);
        let mut output = vec![0u8; r.iter().sum()];
        comm.alltoallv(&input, &s, &mut output, &r)?;
        rounds.output(k, &output, m.new.bytes_mut());
        std::thread::sleep(pacer.after(begun.elapsed()));
    }
    Ok(())
}

/// One move's alltoallv cut in rounds of at most `slice` bytes per pair:
/// what each round sends and receives, and where. Pure, apart from
/// [`Rounds::agree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rounds {
    sends: Vec<usize>,
    recvs: Vec<usize>,
    /// Where each peer's bytes start in the input and in the new column.
    send_at: Vec<usize>,
    recv_at: Vec<usize>,
    slice: usize,
    /// How many rounds (the same on every member).
    pub count: usize,
}

impl Rounds {
    /// The rounds of `moves` over `comm`'s group: one small allreduce of
    /// each move's largest pair makes every member take the same rounds,
    /// of `slice` bytes when any member asks for rounds (`cut`), else one
    /// per move.
    ///
    /// # Errors
    /// The allreduce's.
    pub(crate) fn agree(
        comm: &Comm,
        moves: &[Move],
        slice: usize,
        cut: bool,
    ) -> Result<Vec<Rounds>, Error> {
        let n = comm.group().size();
        let exchanged: Vec<_> = moves.iter().map(|m| exchanged(m, n)).collect();
        let mut mine: Vec<u64> = (exchanged.iter())
            .map(|(s, r)| s.iter().chain(r).copied().max().unwrap_or(0) as u64)
            .collect();
        mine.push(u64::from(cut));
        let mut most = vec![0u64; mine.len()];
        comm.allreduce(&mine, &mut most, Op::MAX)?;
        let cut = most.pop() == Some(1);
        Ok((exchanged.into_iter().zip(most))
            .map(|((sends, recvs), largest)| {
                let slice = match cut {
                    true => slice.max(1),
                    false => (largest as usize).max(1),
                };
                Rounds::new(sends, recvs, slice, largest)
            })
            .collect())
    }

    /// Rounds of `slice` bytes per pair for these bytes sent to and
    /// received from each member, where the largest pair of any member
    /// holds `largest`.
    pub(crate) fn new(sends: Vec<usize>, recvs: Vec<usize>, slice: usize, largest: u64) -> Rounds {
        let starts = |counts: &[usize]| -> Vec<usize> {
            let mut at = 0;
            (counts.iter())
                .map(|&c| {
                    at += c;
                    at - c
                })
                .collect()
        };
        Rounds {
            send_at: starts(&sends),
            recv_at: starts(&recvs),
            sends,
            recvs,
            slice,
            count: largest.div_ceil(slice as u64) as usize,
        }
    }

    /// Bytes of round `k` to and from each member.
    pub(crate) fn sizes(&self, k: usize) -> (Vec<usize>, Vec<usize>) {
        let part = |total: &usize| total.saturating_sub(k * self.slice).min(self.slice);
        (
            self.sends.iter().map(part).collect(),
            self.recvs.iter().map(part).collect(),
        )
    }

    /// Round `k`'s input, taken from the whole `input`.
    pub(crate) fn input(&self, k: usize, input: &[u8]) -> Vec<u8> {
        let (s, _) = self.sizes(k);
        let mut out = Vec::with_capacity(s.iter().sum());
        for (peer, &len) in s.iter().enumerate().filter(|(_, &len)| len > 0) {
            let from = self.send_at[peer] + k * self.slice;
            out.extend_from_slice(&input[from..from + len]);
        }
        out
    }

    /// Puts round `k`'s `output` where it goes in the new column.
    pub(crate) fn output(&self, k: usize, output: &[u8], new: &mut [u8]) {
        let (_, r) = self.sizes(k);
        let mut at = 0;
        for (peer, &len) in r.iter().enumerate().filter(|(_, &len)| len > 0) {
            let to = self.recv_at[peer] + k * self.slice;
            new[to..to + len].copy_from_slice(&output[at..at + len]);
            at += len;
        }
    }
}

/// The first round at or after `at` (a move and a round of it) that is
/// left to start; `(rounds.len(), 0)` when none is. Pure.
fn first_left(rounds: &[Rounds], mut at: (usize, usize)) -> (usize, usize) {
    while at.0 < rounds.len() && at.1 >= rounds[at.0].count {
        at = (at.0 + 1, 0);
    }
    at
}

/// The bytes of `writes` (pieces of `old`, `size`-byte elements), laid
/// end to end in target order.
fn sent<'a>(writes: &[Piece], old: &'a [u8], size: u64) -> std::borrow::Cow<'a, [u8]> {
    let span = |p: &Piece| (p.from * size) as usize..((p.from + p.count) * size) as usize;
    // A distributed array's pieces lie end to end in the old block, in
    // target order: sent from where they are. A replicated array goes
    // whole to each new target: copies laid end to end.
    let contiguous = (writes.windows(2)).all(|w| w[0].from + w[0].count == w[1].from);
    match (contiguous, writes.first(), writes.last()) {
        (true, Some(a), Some(b)) => old[span(a).start..span(b).end].into(),
        (true, _, _) => (&[][..]).into(),
        (false, _, _) => (writes.iter())
            .flat_map(|p| &old[span(p)])
            .copied()
            .collect::<Vec<u8>>()
            .into(),
    }
}

/// What each of `moves` sends, laid end to end once for all its rounds
/// where its pieces do not lie so in the old column (a replicated array,
/// copied for each new target); `None` where they do (sent from there).
pub(crate) fn laid_out(moves: &[Move]) -> Vec<Option<Vec<u8>>> {
    (moves.iter())
        .map(|m| match sent(&m.writes, m.old.bytes(), m.size) {
            std::borrow::Cow::Owned(laid) => Some(laid),
            std::borrow::Cow::Borrowed(_) => None,
        })
        .collect()
}

/// RMA: every piece of `m` this process reads as a target, from each
/// source's exposure through `window` (one `lock_all` when `all`, else a
/// lock per source); its own pieces are copied locally. While `speed` is
/// below 1, [`SLICE`] bytes at a time, each followed by a pause
/// ([`Pacer`]); then the rest at once.
pub(crate) fn by_gets(
    window: &Window,
    all: bool,
    me: u32,
    m: &mut Move,
    speed: &Speed,
) -> Result<(), Error> {
    m.arrange(me);
    let mut cursor = Cursor::new(std::slice::from_ref(m));
    let mut pacer = Pacer::new(speed.share());
    while !cursor.finished() {
        pacer.share = speed.share();
        let slice = match pacer.share < 1.0 {
            true => SLICE as u64,
            false => u64::MAX,
        };
        let begun = Instant::now();
        let slices = cursor.next(slice);
        get_slices(&[window], all, me, std::slice::from_mut(m), &slices)?;
        std::thread::sleep(pacer.after(begun.elapsed()));
    }
    Ok(())
}

/// Gets `slices` (of `moves`, through `windows[move]`); a slice of a
/// piece this process holds itself (`me` is its source) is copied.
fn get_slices(
    windows: &[&Window],
    all: bool,
    me: u32,
    moves: &mut [Move],
    slices: &[Slice],
) -> Result<(), Error> {
    for (k, (window, m)) in windows.iter().zip(moves.iter_mut()).enumerate() {
        let (own, mine): (Vec<&Slice>, Vec<&Slice>) = (slices.iter())
            .filter(|s| s.of == k)
            .partition(|s| m.reads[s.piece].peer == me);
        for s in own {
            let (from, to, _) = m.span(&m.reads[s.piece]);
            let (a, b) = (s.bytes.start as usize, s.bytes.end as usize);
            fresh(&mut m.new.bytes_mut()[to + a..to + b])
                .copy_from_slice(&m.old.bytes()[from + a..from + b]);
        }
        if mine.is_empty() {
            continue;
        }
        let epoch = match all {
            true => Some(window.lock_all(Assert::NOCHECK)?),
            false => None,
        };
        for s in mine {
            let p = m.reads[s.piece];
            let (from, to, _) = m.span(&p);
            let (a, b) = (s.bytes.start as usize, s.bytes.end as usize);
            let into = fresh(&mut m.new.bytes_mut()[to + a..to + b]);
            let at = (from + a) as u64;
            match &epoch {
                Some(epoch) => epoch.get(p.peer, at, into)?,
                None => {
                    let epoch = window.lock(p.peer, LockKind::Shared, Assert::NOCHECK)?;
                    epoch.get(p.peer, at, into)?;
                    epoch.unlock()?;
                }
            }
        }
        if let Some(epoch) = epoch {
            epoch.unlock()?;
        }
    }
    Ok(())
}

/// Part of a piece to get: move `of`, its read `piece`, these bytes of
/// the piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slice {
    pub of: usize,
    pub piece: usize,
    pub bytes: std::ops::Range<u64>,
}

/// Where the gets of a set of moves stand: the pieces to read (or copy,
/// from this process's own old block) in order, and how far into the
/// current one. Pure.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    /// (move, piece, bytes) of every piece.
    pieces: Vec<(usize, usize, u64)>,
    at: usize,
    done: u64,
}

impl Cursor {
    pub(crate) fn new(moves: &[Move]) -> Cursor {
        let pieces = (moves.iter().enumerate())
            .flat_map(|(k, m)| {
                (m.reads.iter().enumerate())
                    .filter(|(_, p)| p.count > 0)
                    .map(move |(i, p)| (k, i, p.count * m.size))
            })
            .collect();
        Cursor {
            pieces,
            at: 0,
            done: 0,
        }
    }

    /// Whether every piece has been handed out.
    pub(crate) fn finished(&self) -> bool {
        self.at >= self.pieces.len()
    }

    /// The next slices, `budget` bytes at most (at least one byte when
    /// any is left).
    pub(crate) fn next(&mut self, budget: u64) -> Vec<Slice> {
        let mut out = Vec::new();
        let mut left = budget.max(1);
        while left > 0 && !self.finished() {
            let (of, piece, len) = self.pieces[self.at];
            let take = (len - self.done).min(left);
            out.push(Slice {
                of,
                piece,
                bytes: self.done..self.done + take,
            });
            left -= take;
            self.done += take;
            if self.done == len {
                self.at += 1;
                self.done = 0;
            }
        }
        out
    }
}

/// The share of the time a background move takes from the application:
/// a checkpoint moves data for this share of the time since the previous
/// one, and a helper thread that shares a core with the application
/// sleeps the rest. One sixteenth keeps an iteration within 10% of its
/// time without a move (omega <= 1.1) with room for the noise.
pub(crate) const SHARE: f64 = 1.0 / 16.0;

/// Who shares this host's CPUs while a background move runs. Pure data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Host {
    /// The job's live processes here, this one included.
    pub live: usize,
    /// Those of them that this reconfiguration spawned (they wait for
    /// their data; the others, the sources, iterate).
    pub new: usize,
    /// The CPUs.
    pub cpus: usize,
}

impl Host {
    /// Whether processes spawned by the reconfiguration wake among sources
    /// that keep every CPU busy. Each mover's time then delays the whole
    /// bulk-synchronous job: the sources' checkpoints together (they run
    /// in step), each new process's wake-ups apart.
    fn joined_busy(&self) -> bool {
        self.new > 0 && self.live.saturating_sub(self.new) >= self.cpus
    }
}

/// The share of the time each process's move may take: [`SHARE`] where
/// every process has a CPU. Where the processes outnumber the CPUs, every
/// wake-up among them costs a context switch beside its work, so their
/// moves together take half of [`SHARE`] of the CPUs
/// (`docs/measurements.md`, "Processes that outnumber the CPUs"): CPUs
/// over processes of it, as each process's iteration waits for the
/// others' in a bulk-synchronous application; where new processes wait
/// among sources that keep every CPU busy ([`Host::joined_busy`]), the
/// sources' checkpoints (in step) and each new process delay the job in
/// turn, and split it `1 + new` ways. Pure.
pub(crate) fn share(host: Host) -> f64 {
    match (host.live > host.cpus, host.joined_busy()) {
        (false, _) => SHARE,
        (true, false) => SHARE / 2.0 * host.cpus as f64 / host.live as f64,
        (true, true) => SHARE / (2 * (1 + host.new)) as f64,
    }
}

/// The share of the time a helper thread of each of the live processes
/// takes: all of it when every process and helper has a CPU, else
/// [`SHARE`] over the processes, halved where the processes alone
/// outnumber the CPUs (as [`share`]). Helpers wake at their own times,
/// not together as checkpoints do, and each wake-up delays one process's
/// iteration, which every process of a bulk-synchronous application
/// then waits for: their delays add up. Pure.
pub(crate) fn helper_share(host: Host) -> f64 {
    let live = host.live.max(1);
    match (2 * live > host.cpus, live > host.cpus) {
        (false, _) => 1.0,
        (true, false) => SHARE / live as f64,
        (true, true) => SHARE / (2 * live) as f64,
    }
}

/// The share of the time a checkpoint's move takes on this process.
/// Under Wait Targets (`waited_for`) all of it: the targets read as fast
/// as they can while the sources iterate until they have (the study's
/// WT, whose targets make blocking reads), so the move ends within an
/// iteration or two at the cost of those iterations' time. Otherwise a
/// checkpoint that returns at once (the application iterates) takes
/// [`share`]; one that `waits` moves at full speed (a source's
/// application has stopped), unless it is a `new` process among
/// processes that outnumber the CPUs: the sources may still iterate, and
/// it takes [`share`]. Pure.
pub(crate) fn checkpoint_share(waits: bool, new: bool, waited_for: bool, host: Host) -> f64 {
    match (waited_for, waits, new && host.live > host.cpus) {
        (true, _, _) | (false, true, false) => 1.0,
        _ => share(host),
    }
}

/// A helper thread's share of the time ([`helper_share`]), read before
/// each slice: its process raises it to all of it once the application
/// waits for the end, when no iteration is left to protect.
#[derive(Debug, Clone)]
pub(crate) struct Speed(Arc<AtomicU64>);

impl Speed {
    pub(crate) fn new(share: f64) -> Speed {
        Speed(Arc::new(AtomicU64::new(share.to_bits())))
    }

    pub(crate) fn share(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    /// All of the time from now on.
    pub(crate) fn full(&self) {
        self.0.store(1.0f64.to_bits(), Ordering::Relaxed);
    }
}

/// How long a process that waits for a paced move sleeps between
/// advancing it (gets, rounds, or looking at its helper thread): every
/// wake-up among busy processes costs one of them a context switch, so
/// it moves a longer piece less often; each advance moves the bytes of
/// its share of the time since the one before ([`Budget`]). A sleep
/// sized by the advance's own time would be far too long after an
/// advance that busy processes preempted (`docs/measurements.md`,
/// "Processes that outnumber the CPUs").
pub(crate) const WAKE: Duration = Duration::from_millis(4);

/// The unit of a paced move: 256 KiB, some tens of microseconds of
/// copying here.
pub(crate) const SLICE: usize = 256 << 10;

/// The bytes per pair of a round of COL moved at checkpoints (paced by
/// [`RoundPacer`]): 16 KiB rounds ran four times as many collectives
/// for the same omega, 256 KiB ones held a checkpoint too long.
pub(crate) const ROUND: usize = 64 << 10;

/// How long to leave the core after `busy` moving data, to take `share`
/// of the time (none for a share of 1 or more). Pure.
pub(crate) fn pause(busy: Duration, share: f64) -> Duration {
    if share >= 1.0 || share <= 0.0 {
        return Duration::ZERO;
    }
    busy.mul_f64((1.0 - share) / share)
}

/// The pauses of a helper thread moving slice after slice: each after
/// the shortest slice so far, the slice's own work. A slice of an
/// alltoallv also waits for the peers, whose pauses would otherwise
/// lengthen this one's, and theirs in turn. Pure.
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    share: f64,
    least: Option<Duration>,
}

impl Pacer {
    pub(crate) fn new(share: f64) -> Pacer {
        Pacer { share, least: None }
    }

    /// The pause after a slice that took `busy`.
    pub(crate) fn after(&mut self, busy: Duration) -> Duration {
        let least = self.least.map_or(busy, |l| l.min(busy));
        self.least = Some(least);
        pause(least, self.share)
    }
}

/// When the next round of a paced exchange may start: a round's work is
/// the time of the calls that advanced it, and the next one starts once
/// the time since it completed leaves that work its share ([`pause`]).
/// (A round started at every checkpoint took far more than its share of
/// an iteration; figures: docs/measurements.md, "Fresh columns, paced
/// rounds, and the floor of a crowded host".) Pure: the caller gives the
/// clock's readings.
#[derive(Debug, Clone, Default)]
pub(crate) struct RoundPacer {
    /// The work on the round in flight, before the current call.
    busy: Duration,
    /// When the current call began.
    since: Option<Instant>,
    /// The earliest start of the next round.
    next: Option<Instant>,
}

impl RoundPacer {
    /// A call advancing the rounds begins `now`.
    pub(crate) fn resume(&mut self, now: Instant) {
        self.since = Some(now);
    }

    /// The round in flight completed `now`; with `share` below 1 the next
    /// waits for its share.
    pub(crate) fn completed(&mut self, now: Instant, share: f64) {
        let work = self.busy + self.since.map_or(Duration::ZERO, |s| now - s);
        self.busy = Duration::ZERO;
        self.since = Some(now);
        self.next = match share < 1.0 {
            true => Some(now + pause(work, share)),
            false => None,
        };
    }

    /// Whether a round may start `now`.
    pub(crate) fn may_start(&self, now: Instant) -> bool {
        self.next.is_none_or(|n| now >= n)
    }

    /// The call ends `now`: its time counts for the round in flight.
    pub(crate) fn pause(&mut self, now: Instant) {
        if let Some(s) = self.since.take() {
            self.busy += now - s;
        }
    }
}

/// How many bytes a checkpoint moves in its share of time: the time
/// allowed at the rate of the moves so far ([`LEAST`] at least, and
/// [`LEAST`] before any), so that a checkpoint takes about its share
/// whatever a slice costs here (a [`SLICE`] took far more than a share of
/// an iteration on shm, first touches of the new memory included; figures:
/// docs/measurements.md, "Omega in step, and moves that fit their share").
/// The moves are timed in the thread's CPU time ([`cpu_time`]): preempted,
/// they would look slower and get fewer bytes each time. Pure.
#[derive(Debug, Clone, Default)]
pub(crate) struct Budget {
    bytes: u64,
    busy: Duration,
}

/// The fewest bytes a checkpoint moves: a page, so that a move always ends.
pub(crate) const LEAST: u64 = 4 << 10;

impl Budget {
    /// The bytes to move in `allowed`.
    pub(crate) fn bytes_in(&self, allowed: Duration) -> u64 {
        if self.busy.is_zero() {
            return LEAST;
        }
        let rate = self.bytes as f64 / self.busy.as_secs_f64();
        ((rate * allowed.as_secs_f64()) as u64).max(LEAST)
    }

    /// Counts `bytes` moved in `busy`.
    pub(crate) fn moved(&mut self, bytes: u64, busy: Duration) {
        self.bytes += bytes;
        self.busy += busy;
    }
}

/// The constant data's move while the application iterates.
pub(crate) enum Work {
    /// Moved.
    Done,
    /// Gets still to make through a window per move, as many bytes as
    /// fit a share of the time since the previous checkpoint (`last`)
    /// at each ([`Budget`]); then (Wait Targets) a barrier.
    Reads {
        windows: Vec<Window>,
        all: bool,
        me: u32,
        cursor: Cursor,
        budget: Budget,
        then_barrier: bool,
        last: Instant,
    },
    /// COL without a thread, over a Comm of its own (which outlives it:
    /// a Comm dropped waits for the other members to be done with it).
    /// `NonBlocking`: an `ialltoallv` per round of at most [`ROUND`] bytes
    /// per pair, the next started once the one in flight completed and,
    /// when paced, once the round's work fits the share of the time since
    /// ([`RoundPacer`]), the moves' rounds one after the other. Wait
    /// Targets: one round per move, all started at once (as the study's
    /// `MPI_Ialltoallv` per array), then a barrier.
    Exchange {
        rounds: Vec<Rounds>,
        /// Each move's bytes laid end to end where they are not so in its
        /// old column ([`laid_out`]).
        laid: Vec<Option<Vec<u8>>>,
        /// The move and round to start next.
        at: (usize, usize),
        /// The rounds in flight, oldest first, with their move and round.
        runs: Vec<((usize, usize), Run<u8>)>,
        /// How many rounds may be in flight at once.
        lanes: usize,
        pacer: RoundPacer,
        then_barrier: bool,
    },
    /// A helper thread moving it (the moves come back when it ends);
    /// then (Wait Targets) a barrier.
    Helper {
        thread: JoinHandle<Result<Vec<Move>, Error>>,
        /// Its share, raised when a checkpoint moves at full speed.
        speed: Speed,
        then_barrier: bool,
    },
    /// Waiting for every process to have moved its part.
    Barrier(Barrier),
}

/// Advances `work` once: the moves it reads into are `moves` (a helper
/// thread holds them while it runs, and gives them back there), over
/// `comm` for [`Work::Exchange`]; gets
/// take `share` of the time since the previous call (the application
/// iterates between calls), or run to the end for a share of 1;
/// `start_barrier` begins a barrier over the group when it is time for
/// one. Returns the work left.
///
/// # Errors
/// Transfer errors; a helper thread's error, or its panic.
pub(crate) fn advance(
    work: Work,
    moves: &mut Vec<Move>,
    comm: Option<&Comm>,
    share: f64,
    start_barrier: impl FnOnce() -> Result<Barrier, Error>,
) -> Result<Work, Error> {
    match work {
        Work::Done => Ok(Work::Done),
        Work::Reads {
            windows,
            all,
            me,
            mut cursor,
            mut budget,
            then_barrier,
            last,
        } => {
            let begun = Instant::now();
            let mut left = match share < 1.0 {
                true => budget.bytes_in((begun - last).mul_f64(share)),
                false => u64::MAX,
            };
            let refs: Vec<&Window> = windows.iter().collect();
            while left > 0 && !cursor.finished() {
                let started = cpu_time::thread();
                // Unpaced, every get at once (as a blocking move).
                let piece = if share < 1.0 {
                    left.min(SLICE as u64)
                } else {
                    left
                };
                let slices = cursor.next(piece);
                get_slices(&refs, all, me, moves, &slices)?;
                let bytes: u64 = slices.iter().map(|s| s.bytes.end - s.bytes.start).sum();
                budget.moved(bytes, cpu_time::thread().saturating_sub(started));
                left -= bytes.min(left);
            }
            if !cursor.finished() {
                return Ok(Work::Reads {
                    windows,
                    all,
                    me,
                    cursor,
                    budget,
                    then_barrier,
                    last: Instant::now(),
                });
            }
            for w in windows {
                w.free()?;
            }
            match then_barrier {
                true => barrier(start_barrier()?),
                false => Ok(Work::Done),
            }
        }
        Work::Exchange {
            rounds,
            laid,
            mut at,
            mut runs,
            lanes,
            mut pacer,
            then_barrier,
        } => {
            let comm =
                comm.ok_or_else(|| Error::State("internal: rounds without a Comm".into()))?;
            pacer.resume(Instant::now());
            loop {
                // Completed rounds, oldest first (each call into the Comm
                // advances all of them).
                let mut completed = false;
                while let Some((_, r)) = runs.first_mut() {
                    if !r.test()? {
                        break;
                    }
                    let ((m, k), r) = runs.remove(0);
                    rounds[m].output(k, &r.into_buffers()?.output, moves[m].new.bytes_mut());
                    pacer.completed(Instant::now(), share);
                    completed = true;
                }
                let mut started = false;
                at = first_left(&rounds, at);
                while at.0 < rounds.len() && runs.len() < lanes && pacer.may_start(Instant::now()) {
                    let (m, k) = at;
                    let (sends, recvs) = rounds[m].sizes(k);
                    let mv = &moves[m];
                    let borrowed;
                    let whole: &[u8] = match &laid[m] {
                        Some(laid) => laid,
                        None => {
                            borrowed = sent(&mv.writes, mv.old.bytes(), mv.size);
                            &borrowed
                        }
                    };
                    let input = rounds[m].input(k, whole);
                    let mut output = vec![0u8; recvs.iter().sum()];
                    fresh(&mut output);
                    runs.push((at, comm.ialltoallv(input, &sends, output, &recvs)?));
                    at = first_left(&rounds, (m, k + 1));
                    started = true;
                }
                if !(completed || started) || runs.is_empty() {
                    break;
                }
            }
            pacer.pause(Instant::now());
            match (runs.is_empty() && at.0 == rounds.len(), then_barrier) {
                (false, _) => Ok(Work::Exchange {
                    rounds,
                    laid,
                    at,
                    runs,
                    lanes,
                    pacer,
                    then_barrier,
                }),
                (true, true) => barrier(start_barrier()?),
                (true, false) => Ok(Work::Done),
            }
        }
        Work::Helper {
            thread,
            speed,
            then_barrier,
        } => {
            if share >= 1.0 {
                speed.full();
            }
            if !thread.is_finished() {
                return Ok(Work::Helper {
                    thread,
                    speed,
                    then_barrier,
                });
            }
            *moves = thread
                .join()
                .map_err(|_| Error::State("the helper thread panicked".into()))??;
            match then_barrier {
                true => barrier(start_barrier()?),
                false => Ok(Work::Done),
            }
        }
        Work::Barrier(b) => barrier(b),
    }
}

/// Tests `b`: done, or the barrier still to wait for.
fn barrier(mut b: Barrier) -> Result<Work, Error> {
    match b.test()? {
        true => Ok(Work::Done),
        false => Ok(Work::Barrier(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(reads: Vec<Piece>, size: u64) -> Move {
        Move {
            entry: 0,
            size,
            old: Arc::new(Vec::<u8>::new()),
            new: Box::new(Vec::<u8>::new()),
            reads,
            writes: Vec::new(),
            in_place: None,
        }
    }

    #[test]
    fn a_move_in_place_keeps_its_piece_where_the_new_block_holds_it() {
        // Growing: old elements 0..4 are kept at 0..4 of a block of 6.
        let mut m = mv(vec![piece(0, 4), piece(1, 2)], 4);
        m.new = Box::new(vec![10u32, 11, 12, 13]);
        m.reads[1].to = 4;
        m.in_place = Some(6);
        m.arrange(0);
        assert_eq!(
            m.new.bytes(),
            bytemuck::cast_slice(&[10u32, 11, 12, 13, 0, 0])
        );
        assert_eq!(
            m.reads,
            vec![Piece {
                to: 4,
                ..piece(1, 2)
            }]
        );
        // Shrinking: old elements 3..5 are kept at 0..2 of a block of 3.
        let mut m = mv(
            vec![
                Piece {
                    from: 3,
                    ..piece(2, 2)
                },
                piece(1, 1),
            ],
            4,
        );
        m.new = Box::new(vec![10u32, 11, 12, 13, 14]);
        m.reads[1].to = 2;
        m.in_place = Some(3);
        m.arrange(2);
        assert_eq!(m.new.bytes(), bytemuck::cast_slice(&[13u32, 14, 12]));
        assert_eq!(m.reads.len(), 1);
        // A fresh column is left alone.
        let mut m = mv(vec![piece(0, 1)], 1);
        m.arrange(0);
        assert_eq!(m.reads.len(), 1);
    }

    fn piece(peer: u32, count: u64) -> Piece {
        Piece {
            peer,
            from: 0,
            to: 0,
            count,
        }
    }

    #[test]
    fn pauses_leave_the_application_its_share() {
        let ms = Duration::from_millis;
        assert_eq!(pause(ms(1), 1.0), Duration::ZERO);
        assert_eq!(pause(ms(1), 0.25), ms(3));
        let mut p = Pacer::new(0.5);
        assert_eq!(p.after(ms(4)), ms(4));
        // A slice that waited for its peers does not lengthen the pause.
        assert_eq!(p.after(ms(40)), ms(4));
        assert_eq!(p.after(ms(2)), ms(2));
        assert_eq!(Pacer::new(1.0).after(ms(9)), Duration::ZERO);
    }

    #[test]
    fn a_helper_speeds_up_when_raised() {
        let speed = Speed::new(SHARE);
        let seen = speed.clone();
        assert_eq!(seen.share(), SHARE);
        speed.full();
        assert_eq!(seen.share(), 1.0);
    }

    #[test]
    fn the_next_round_skips_moves_with_none_left() {
        let r = |count| Rounds::new(vec![count], vec![count], 1, count as u64);
        // Moves of 2, 0 and 1 rounds.
        let rounds = [r(2), r(0), r(1)];
        assert_eq!(first_left(&rounds, (0, 0)), (0, 0));
        assert_eq!(first_left(&rounds, (0, 1)), (0, 1));
        assert_eq!(first_left(&rounds, (0, 2)), (2, 0));
        assert_eq!(first_left(&rounds, (2, 1)), (3, 0));
        assert_eq!(first_left(&[], (0, 0)), (0, 0));
    }

    #[test]
    fn rounds_cut_every_pair_into_the_same_number_of_slices() {
        // To ranks 0, 1, 2: 5, 0 and 12 bytes; from them 3, 7, 0.
        let r = Rounds::new(vec![5, 0, 12], vec![3, 7, 0], 4, 12);
        assert_eq!(r.count, 3);
        assert_eq!(r.sizes(0), (vec![4, 0, 4], vec![3, 4, 0]));
        assert_eq!(r.sizes(1), (vec![1, 0, 4], vec![0, 3, 0]));
        assert_eq!(r.sizes(2), (vec![0, 0, 4], vec![0, 0, 0]));
        let input: Vec<u8> = (0..17).collect();
        let mut sent = Vec::new();
        let mut new = vec![0u8; 10];
        for k in 0..r.count {
            sent.push(r.input(k, &input));
            // What arrives: round k's bytes from each peer, numbered
            // 100 + their place in the new column.
            let (_, recvs) = r.sizes(k);
            let output: Vec<u8> = (recvs.iter().enumerate())
                .flat_map(|(p, &len)| {
                    let at = [0, 3, 10][p] + k * 4;
                    (at..at + len).map(|i| 100 + i as u8)
                })
                .collect();
            r.output(k, &output, &mut new);
        }
        assert_eq!(sent[0], [0, 1, 2, 3, 5, 6, 7, 8]);
        assert_eq!(sent[1], [4, 9, 10, 11, 12]);
        assert_eq!(sent[2], [13, 14, 15, 16]);
        assert_eq!(new, (100..110).collect::<Vec<u8>>());
        // A member with nothing to move still takes every round.
        assert_eq!(Rounds::new(vec![0; 3], vec![0; 3], 4, 12).count, 3);
    }

    fn host(live: usize, new: usize) -> Host {
        Host { live, new, cpus: 2 }
    }

    #[test]
    fn crowded_processes_share_half_the_share() {
        assert_eq!(share(host(2, 0)), SHARE);
        assert_eq!(share(host(1, 0)), SHARE);
        assert_eq!(share(host(0, 0)), SHARE);
        assert_eq!(share(host(4, 0)), SHARE / 4.0);
        assert_eq!(share(host(3, 0)), SHARE / 3.0);
        // A CPU free for the new processes: as any crowded host.
        assert_eq!(share(host(4, 3)), SHARE / 4.0);
        assert_eq!(share(host(2, 1)), SHARE);
        let four = Host {
            live: 2,
            new: 0,
            cpus: 4,
        };
        assert_eq!(helper_share(four), 1.0);
        assert_eq!(helper_share(host(2, 0)), SHARE / 2.0);
        assert_eq!(helper_share(host(1, 0)), 1.0);
        assert_eq!(helper_share(host(3, 0)), SHARE / 6.0);
        assert_eq!(helper_share(host(4, 2)), SHARE / 8.0);
    }

    #[test]
    fn new_processes_among_busy_sources_split_half_the_share() {
        // 2 -> 3 and 2 -> 4 on two CPUs: the sources in step, and each new
        // process, one after the other.
        assert_eq!(share(host(3, 1)), SHARE / 4.0);
        assert_eq!(share(host(4, 2)), SHARE / 6.0);
        // A check, and a new process's wait, but for Wait Targets.
        for (waits, new) in [(false, false), (false, true), (true, true)] {
            assert_eq!(checkpoint_share(waits, new, false, host(4, 2)), SHARE / 6.0);
        }
    }

    #[test]
    fn a_checkpoint_waits_at_full_speed_only_where_cores_are_free() {
        let (free, crowded) = (host(2, 0), host(4, 0));
        // Checks take the application's share, crowded or not.
        assert_eq!(checkpoint_share(false, false, false, free), SHARE);
        assert_eq!(
            checkpoint_share(false, true, false, crowded),
            share(crowded)
        );
        // Waits: all of a free core; a crowded one's share for a new
        // process (the sources may iterate), all of it for a source.
        assert_eq!(checkpoint_share(true, true, false, free), 1.0);
        assert_eq!(checkpoint_share(true, true, false, crowded), share(crowded));
        assert_eq!(checkpoint_share(true, false, false, crowded), 1.0);
    }

    #[test]
    fn wait_targets_moves_at_full_speed() {
        for h in [host(2, 0), host(4, 0), host(4, 2), host(4, 3)] {
            for (waits, new) in [(false, false), (true, false), (true, true)] {
                assert_eq!(checkpoint_share(waits, new, true, h), 1.0);
            }
        }
    }

    #[test]
    fn rounds_wait_for_their_share_after_their_work() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut p = RoundPacer::default();
        assert!(p.may_start(t0));
        // A round advanced by two calls of 1 ms each, 10 ms apart.
        p.resume(t0);
        p.pause(t0 + ms(1));
        p.resume(t0 + ms(10));
        p.completed(t0 + ms(11), 0.25);
        // 2 ms of work at a quarter: 6 ms off.
        assert!(!p.may_start(t0 + ms(11)));
        assert!(!p.may_start(t0 + ms(16)));
        assert!(p.may_start(t0 + ms(17)));
        // What follows the completion counts for the next round only.
        p.pause(t0 + ms(12));
        p.resume(t0 + ms(17));
        p.completed(t0 + ms(17), 0.5);
        assert!(!p.may_start(t0 + ms(17)));
        assert!(p.may_start(t0 + ms(18)));
        // Unpaced: back to back.
        p.completed(t0 + ms(20), 1.0);
        assert!(p.may_start(t0 + ms(20)));
    }

    #[test]
    fn a_budget_moves_at_the_rate_seen_so_far() {
        let us = Duration::from_micros;
        let mut b = Budget::default();
        assert_eq!(b.bytes_in(us(60)), LEAST, "nothing seen yet");
        // 1 MiB in 1 ms: 64 KiB in 62.5 us.
        b.moved(1 << 20, us(1000));
        assert_eq!(b.bytes_in(us(62) + Duration::from_nanos(500)), 64 << 10);
        assert_eq!(b.bytes_in(Duration::ZERO), LEAST);
        b.moved(1 << 20, us(3000));
        assert_eq!(b.bytes_in(us(4000)), 2 << 20);
    }

    #[test]
    fn a_cursor_hands_out_every_byte_once_within_the_budget() {
        // Move 0: 10 elements of 8 bytes from rank 1, 3 from itself (rank
        // 0, copied locally), 5 from rank 2; move 1: 7 bytes from rank 1.
        let moves = [
            mv(vec![piece(1, 10), piece(0, 3), piece(2, 5)], 8),
            mv(vec![piece(1, 7)], 1),
        ];
        let mut c = Cursor::new(&moves);
        let mut got = Vec::new();
        while !c.finished() {
            let slices = c.next(30);
            let total: u64 = slices.iter().map(|s| s.bytes.end - s.bytes.start).sum();
            assert!(total <= 30 && total > 0);
            got.extend(slices);
        }
        let of = |k: usize, p: usize| -> Vec<std::ops::Range<u64>> {
            (got.iter())
                .filter(|s| s.of == k && s.piece == p)
                .map(|s| s.bytes.clone())
                .collect()
        };
        assert_eq!(of(0, 0), vec![0..30, 30..60, 60..80]);
        assert_eq!(of(0, 1), vec![0..10, 10..24], "its own piece, copied");
        assert_eq!(of(0, 2), vec![0..16, 16..40]);
        assert_eq!(of(1, 0), vec![0..6, 6..7]);
        let mut all = Cursor::new(&moves);
        assert_eq!(all.next(u64::MAX).len(), 4);
        assert!(all.finished());
        assert!(Cursor::new(&[]).finished());
    }
}
