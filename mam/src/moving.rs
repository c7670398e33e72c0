//! How the data moves: one registered array's pieces ([`Move`]), by an
//! alltoallv or by gets, at once or a budget of bytes per checkpoint
//! ([`Cursor`], pure), and the constant data's move in the background
//! ([`Work`]).

use std::sync::Arc;
use std::thread::JoinHandle;

use onesided_collectives::Comm;
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
}

impl Move {
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

    /// Copies the pieces this process holds itself (it is their source).
    pub(crate) fn copy_own(&mut self, me: u32) {
        let own: Vec<Piece> = self
            .reads
            .iter()
            .copied()
            .filter(|p| p.peer == me)
            .collect();
        for p in own {
            let (from, to, len) = self.span(&p);
            self.new.bytes_mut()[to..to + len].copy_from_slice(&self.old.bytes()[from..from + len]);
        }
    }
}

/// COL: one alltoallv of `m`'s bytes over `comm`'s group.
pub(crate) fn by_alltoallv(comm: &Comm, m: &mut Move) -> Result<(), Error> {
    let n = comm.group().size();
    let size = m.size;
    let bytes = |pieces: &[Piece]| -> Vec<usize> {
        block::counts(pieces, n)
            .into_iter()
            .map(|c| (c * size) as usize)
            .collect()
    };
    let (sends, recvs) = (bytes(&m.writes), bytes(&m.reads));
    let old = m.old.bytes();
    let span = |p: &Piece| (p.from * size) as usize..((p.from + p.count) * size) as usize;
    // A distributed array's pieces lie end to end in the old block, in
    // target order: sent from where they are. A replicated array goes
    // whole to each new target: copies laid end to end.
    let contiguous = (m.writes.windows(2)).all(|w| w[0].from + w[0].count == w[1].from);
    let copies: Vec<u8>;
    let input = match (contiguous, m.writes.first(), m.writes.last()) {
        (true, Some(a), Some(b)) => &old[span(a).start..span(b).end],
        (true, _, _) => &[][..],
        (false, _, _) => {
            copies = m
                .writes
                .iter()
                .flat_map(|p| &old[span(p)])
                .copied()
                .collect();
            &copies[..]
        }
    };
    // What arrives fills the new column from its start (a continuing
    // process's replicated copy receives nothing).
    let output = &mut m.new.bytes_mut()[..recvs.iter().sum::<usize>()];
    Ok(comm.alltoallv(input, &sends, output, &recvs)?)
}

/// RMA: every piece of `m` this process reads as a target, from each
/// source's exposure through `window` (one `lock_all` when `all`, else a
/// lock per source); its own pieces are copied locally.
pub(crate) fn by_gets(window: &Window, all: bool, me: u32, m: &mut Move) -> Result<(), Error> {
    m.copy_own(me);
    let mut cursor = Cursor::new(std::slice::from_ref(m), me);
    let slices = cursor.next(u64::MAX);
    get_slices(&[window], all, std::slice::from_mut(m), &slices)
}

/// Gets `slices` (of `moves`, through `windows[move]`).
fn get_slices(
    windows: &[&Window],
    all: bool,
    moves: &mut [Move],
    slices: &[Slice],
) -> Result<(), Error> {
    for (k, (window, m)) in windows.iter().zip(moves.iter_mut()).enumerate() {
        let mine: Vec<&Slice> = slices.iter().filter(|s| s.of == k).collect();
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
            let into = &mut m.new.bytes_mut()[to + a..to + b];
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

/// Where the gets of a set of moves stand: the remote pieces in order,
/// and how far into the current one. Pure.
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    /// (move, piece, bytes) of every piece read from another process.
    pieces: Vec<(usize, usize, u64)>,
    at: usize,
    done: u64,
}

impl Cursor {
    pub(crate) fn new(moves: &[Move], me: u32) -> Cursor {
        let pieces = (moves.iter().enumerate())
            .flat_map(|(k, m)| {
                (m.reads.iter().enumerate())
                    .filter(|(_, p)| p.peer != me && p.count > 0)
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

/// Bytes a process gets per checkpoint under the nonblocking
/// strategies: a few hundred microseconds of copying on these machines,
/// so an iteration barely notices it.
pub(crate) const BUDGET: u64 = 4 << 20;

/// The constant data's move while the application iterates.
pub(crate) enum Work {
    /// Moved.
    Done,
    /// Gets still to make, [`BUDGET`] bytes per checkpoint, through a
    /// window per move; then (Wait Targets) a barrier.
    Reads {
        windows: Vec<Window>,
        all: bool,
        cursor: Cursor,
        then_barrier: bool,
    },
    /// A helper thread moving it (the moves come back when it ends);
    /// then (Wait Targets) a barrier.
    Helper {
        thread: JoinHandle<Result<Vec<Move>, Error>>,
        then_barrier: bool,
    },
    /// Waiting for every process to have moved its part.
    Barrier(Barrier),
}

/// Advances `work` once: the moves it reads into are `moves` (a helper
/// thread holds them while it runs, and gives them back there);
/// `start_barrier` begins a barrier over the group when it is time for
/// one. Returns the work left.
///
/// # Errors
/// Transfer errors; a helper thread's error, or its panic.
pub(crate) fn advance(
    work: Work,
    moves: &mut Vec<Move>,
    start_barrier: impl FnOnce() -> Result<Barrier, Error>,
) -> Result<Work, Error> {
    match work {
        Work::Done => Ok(Work::Done),
        Work::Reads {
            windows,
            all,
            mut cursor,
            then_barrier,
        } => {
            let slices = cursor.next(BUDGET);
            let refs: Vec<&Window> = windows.iter().collect();
            get_slices(&refs, all, moves, &slices)?;
            if !cursor.finished() {
                return Ok(Work::Reads {
                    windows,
                    all,
                    cursor,
                    then_barrier,
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
        Work::Helper {
            thread,
            then_barrier,
        } => {
            if !thread.is_finished() {
                return Ok(Work::Helper {
                    thread,
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
        }
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
    fn a_cursor_hands_out_every_remote_byte_once_within_the_budget() {
        // Move 0: 10 elements of 8 bytes from rank 1, 3 from itself (rank
        // 0, copied locally), 5 from rank 2; move 1: 7 bytes from rank 1.
        let moves = [
            mv(vec![piece(1, 10), piece(0, 3), piece(2, 5)], 8),
            mv(vec![piece(1, 7)], 1),
        ];
        let mut c = Cursor::new(&moves, 0);
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
        assert!(of(0, 1).is_empty(), "its own piece is copied, not read");
        assert_eq!(of(0, 2), vec![0..10, 10..40]);
        assert_eq!(of(1, 0), vec![0..7]);
        let mut all = Cursor::new(&moves, 0);
        assert_eq!(all.next(u64::MAX).len(), 3);
        assert!(all.finished());
        assert!(Cursor::new(&[], 0).finished());
    }
}
