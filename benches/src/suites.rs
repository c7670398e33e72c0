//! The rank side of onesided's suites: the same cases, sizes, repetition
//! counts, checks and output lines as the MPICH peer
//! (`benches/mpich/rma.c`), on onesided's windows.
//!
//! Every rank is an origin at once: rank r targets (r + 1) % N and is
//! written by (r + N - 1) % N. Warm-up repetitions (10 %, at least 2) are
//! untimed; rank 0 times each repetition and prints one line per case:
//! `SUITE CASE BYTES MEDIAN_US MIN_US MAX_US`. A wrong value is an error
//! naming the suite, case, rank and byte.

use std::time::Instant;

use onesided_fabric::World;
use onesided_rma::{Assert, Group, LockKind, Op, RemoteAccess, Request, Rma, Window};

use crate::turns::Turns;

/// Bytes of a window in the `window` suite.
const WINDOW_BYTES: usize = 1 << 20;
/// Bytes of the `get` / `put` windows, and the largest transfer.
const XFER_WIN: usize = 8 << 20;
const SIZES: [usize; 8] = [8, 64, 512, 4096, 32768, 262_144, 1 << 20, 4 << 20];
/// Operations per repetition of the bandwidth case.
const NBUF: usize = 8;

/// The suites, by name.
pub const SUITES: [&str; 6] = ["window", "get", "put", "atomic", "ibarrier", "collectives"];

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Byte `i` of rank `rank`'s data: never 0xff.
pub fn pattern(rank: u32, i: usize) -> u8 {
    ((i as u64 * 31 + u64::from(rank) * 17 + 5) % 251) as u8
}

struct Bench {
    suite: &'static str,
    rank: u32,
    target: u32,
    source: u32,
    scale: f64,
    rma: Rma,
    group: Group,
    /// This rank's turns, when the driver hands them out
    /// ([`crate::turns`]).
    turns: std::cell::RefCell<Option<Turns>>,
}

impl Bench {
    fn reps(&self, base: usize) -> usize {
        ((base as f64 * self.scale).round() as usize).max(5)
    }

    fn barrier(&self) -> Result<()> {
        Ok(self.rma.ibarrier(&self.group)?.wait()?)
    }

    /// Prints a case's line (rank 0), then ends this rank's turn.
    ///
    /// # Errors
    /// A driver that is gone.
    fn report(&self, case: &str, bytes: usize, t: &mut [f64]) -> Result<()> {
        self.report_chosen(case, bytes, t, "")
    }

    /// [`Bench::report`] with the algorithm onesided chose as a seventh
    /// field (none when empty).
    ///
    /// # Errors
    /// As [`Bench::report`].
    fn report_chosen(
        &self,
        case: &str,
        bytes: usize,
        t: &mut [f64],
        algorithm: &str,
    ) -> Result<()> {
        if self.rank == 0 && !t.is_empty() {
            t.sort_by(f64::total_cmp);
            println!(
                "{} {case} {bytes} {:.3} {:.3} {:.3}{}{algorithm}",
                self.suite,
                t[t.len() / 2],
                t[0],
                t[t.len() - 1],
                if algorithm.is_empty() { "" } else { " " }
            );
        }
        // After a barrier, as the MPICH side does (benches/mpich/common.h):
        // no rank's operations need a peer that waits for its turn.
        if let Some(turns) = self.turns.borrow_mut().as_mut() {
            self.barrier()?;
            turns.pass()?;
        }
        Ok(())
    }

    fn check(&self, case: &str, what: &str, got: &[u8], owner: u32, disp: usize) -> Result<()> {
        match got
            .iter()
            .enumerate()
            .find(|(i, b)| **b != pattern(owner, disp + i))
        {
            None => Ok(()),
            Some((i, b)) => Err(format!(
                "{} {case}: rank {} {what}, byte {}: expected {} found {b}",
                self.suite,
                self.rank,
                disp + i,
                pattern(owner, disp + i)
            )
            .into()),
        }
    }

    /// Times `warm + reps` repetitions of `rep` (microseconds, divided by
    /// `ops`), each after `before`.
    fn timed(
        &self,
        reps: usize,
        ops: usize,
        mut before: impl FnMut() -> Result<()>,
        mut rep: impl FnMut() -> Result<()>,
    ) -> Result<Vec<f64>> {
        let warm = (reps / 10).max(2);
        let mut t = Vec::with_capacity(reps);
        for i in 0..warm + reps {
            before()?;
            let start = Instant::now();
            rep()?;
            if i >= warm {
                t.push(start.elapsed().as_secs_f64() * 1e6 / ops as f64);
            }
        }
        Ok(t)
    }
}

/// Runs `suite` on this rank, scaling every repetition count by `scale`,
/// a case per turn when `turns` are handed out.
///
/// # Errors
/// An unknown suite, a fabric or window error, a wrong value, or a driver
/// that is gone.
pub fn run(world: &World, suite: &str, scale: f64, turns: Option<Turns>) -> Result<()> {
    let suite = SUITES
        .iter()
        .find(|s| **s == suite)
        .ok_or_else(|| format!("unknown suite {suite:?} (one of {})", SUITES.join(", ")))?;
    let (rank, n) = (world.rank(), world.size());
    let b = Bench {
        suite,
        rank,
        target: (rank + 1) % n,
        source: (rank + n - 1) % n,
        scale,
        rma: Rma::new(world.endpoint())?,
        group: Group::world(n),
        turns: std::cell::RefCell::new(turns),
    };
    b.barrier()?;
    match *suite {
        "window" => window(&b),
        "get" => xfer(&b, false),
        "put" => xfer(&b, true),
        "atomic" => atomic(&b),
        "collectives" => collectives(&b, world),
        _ => ibarrier(&b),
    }
}

/// Gets 8 bytes at `disp` (where the target's byte 64 lies) under
/// lock_all and checks them.
fn get_checked(b: &Bench, case: &str, w: &Window, disp: u64) -> Result<()> {
    let mut got = [0u8; 8];
    let all = w.lock_all(Assert::empty())?;
    all.get(b.target, disp, &mut got)?;
    all.unlock()?;
    b.check(case, "get from the target", &got, b.target, 64)
}

fn window(b: &Bench) -> Result<()> {
    let reps = b.reps(200);
    let data: Vec<u8> = (0..WINDOW_BYTES).map(|i| pattern(b.rank, i)).collect();
    let barrier = || b.barrier();

    // New memory exposed each time, filled before the window makes it
    // visible (no barrier needed before peers read).
    let mut t = b.timed(reps, 1, barrier, || {
        let x = b
            .rma
            .expose(&b.group, WINDOW_BYTES, RemoteAccess::ReadWrite)?;
        x.write(0, &data[..128])?;
        let w = b.rma.create(&x);
        get_checked(b, "create_free", &w, 64)?;
        Ok(w.free()?)
    })?;
    b.report("create_free", WINDOW_BYTES, &mut t)?;

    // The same with no access: what creating and freeing alone cost.
    let mut t = b.timed(reps, 1, barrier, || {
        let x = b
            .rma
            .expose(&b.group, WINDOW_BYTES, RemoteAccess::ReadWrite)?;
        x.write(0, &data[..128])?;
        Ok(b.rma.create(&x).free()?)
    })?;
    b.report("create_free_bare", WINDOW_BYTES, &mut t)?;

    let mut t = b.timed(reps, 1, barrier, || {
        let w = b
            .rma
            .allocate(&b.group, WINDOW_BYTES, RemoteAccess::ReadWrite)?;
        w.write_local(0, &data[..128])?;
        b.barrier()?;
        get_checked(b, "allocate_free", &w, 64)?;
        Ok(w.free()?)
    })?;
    b.report("allocate_free", WINDOW_BYTES, &mut t)?;

    // Attachments: the k-th has displacement k << 40 everywhere, so no
    // address exchange is needed; a barrier tells peers it is attached
    // (the MPI peer's allgather of addresses does both).
    let dynamic = b.rma.create_dynamic(&b.group)?;
    let ep = b.rma.endpoint();
    let mut region = Some(std::sync::Arc::new(ep.register_shared(
        WINDOW_BYTES,
        onesided_fabric::Access::REMOTE_READ | onesided_fabric::Access::REMOTE_WRITE,
    )?));
    if let Some(r) = &region {
        r.write_bytes(0, &data)?;
    }
    let mut t = b.timed(reps, 1, barrier, || {
        let r = region.take().ok_or("region lost")?;
        let disp = dynamic.attach(r)?;
        b.barrier()?;
        get_checked(b, "attach_detach", &dynamic, disp + 64)?;
        b.barrier()?;
        region = Some(dynamic.detach(disp)?);
        Ok(())
    })?;
    b.report("attach_detach", WINDOW_BYTES, &mut t)?;
    dynamic.free()?;

    // Windows again and again over memory exposed once.
    let x = b
        .rma
        .expose(&b.group, WINDOW_BYTES, RemoteAccess::ReadWrite)?;
    x.write(0, &data)?;
    b.barrier()?;
    let mut t = b.timed(reps, 1, barrier, || {
        let w = b.rma.create(&x);
        get_checked(b, "recreate_free", &w, 64)?;
        Ok(w.free()?)
    })?;
    b.report("recreate_free", WINDOW_BYTES, &mut t)?;
    Ok(())
}

/// The get and put cases: under lock_all with a flush (completion at the
/// target) per operation, under a lock per operation, eight in flight per
/// flush; and for put, under lock_all with a flush_local (completion at
/// the origin only, what MPICH's flush of a small put amounts to on some
/// providers).
const XFER_CASES: [&str; 4] = [
    "lock_all_flush",
    "lock_unlock",
    "bandwidth",
    "lock_all_flush_local",
];

fn xfer_disp(k: usize, bytes: usize) -> usize {
    (k * bytes) % (XFER_WIN - bytes + 1)
}

fn xfer(b: &Bench, put: bool) -> Result<()> {
    let w = b
        .rma
        .allocate(&b.group, XFER_WIN, RemoteAccess::ReadWrite)?;
    let mine: Vec<u8> = (0..XFER_WIN).map(|i| pattern(b.rank, i)).collect();
    if !put {
        w.write_local(0, &mine)?;
    }
    let zeros = vec![0u8; XFER_WIN];
    let mut local: Vec<Vec<u8>> = (0..NBUF).map(|_| vec![0u8; 4 << 20]).collect();
    let to = b.target;
    for (c, case) in XFER_CASES.iter().enumerate() {
        if c == 3 && !put {
            continue;
        }
        for bytes in SIZES {
            let reps = b.reps((64usize << 20).div_ceil(bytes).clamp(20, 1000));
            let ops = if c == 2 { NBUF } else { 1 };
            for (k, l) in local.iter_mut().enumerate().take(ops) {
                let disp = xfer_disp(k, bytes);
                if put {
                    l[..bytes].copy_from_slice(&mine[disp..disp + bytes]);
                } else {
                    l[..bytes].fill(0xff);
                }
            }
            let mut owned: Vec<Option<Box<[u8]>>> = (local.iter().take(ops))
                .map(|l| Some(l[..bytes].into()))
                .collect();
            if put {
                w.write_local(0, &zeros)?;
            }
            b.barrier()?;
            let epoch = if c == 1 {
                None
            } else {
                Some(w.lock_all(Assert::empty())?)
            };
            let mut t = b.timed(
                reps,
                ops,
                || Ok(()),
                || {
                    let lock = if c == 1 {
                        Some(w.lock(to, LockKind::Shared, Assert::empty())?)
                    } else {
                        None
                    };
                    let e = lock.as_ref().or(epoch.as_ref()).ok_or("no epoch")?;
                    if c == 2 {
                        // Eight operations in flight, then one flush; the
                        // request forms that own their buffers (no copy,
                        // as MPI_Rget and MPI_Rput into user memory).
                        let mut rs = Vec::with_capacity(NBUF);
                        for (k, slot) in owned.iter_mut().enumerate() {
                            let buf = slot.take().ok_or("a buffer still in flight")?;
                            let disp = xfer_disp(k, bytes) as u64;
                            rs.push(match put {
                                true => e.rput_owned(to, disp, buf)?,
                                false => e.rget_owned(to, disp, buf)?,
                            });
                        }
                        e.flush(to)?;
                        onesided_rma::wait_all(&mut rs)?;
                        for (slot, r) in owned.iter_mut().zip(&mut rs) {
                            *slot = r.take_buffer();
                        }
                    } else if put {
                        e.put(to, 0, &local[0][..bytes])?;
                    } else {
                        e.get(to, 0, &mut local[0][..bytes])?;
                    }
                    let all = epoch.as_ref().ok_or("no epoch");
                    match (lock, c) {
                        (Some(l), _) => l.unlock()?,
                        (None, 3) => all?.flush_local(to)?,
                        (None, _) => all?.flush(to)?,
                    }
                    Ok(())
                },
            )?;
            if let Some(e) = epoch {
                e.unlock()?;
            }
            if put {
                b.barrier()?;
                let mut own = vec![0u8; bytes];
                for k in 0..ops {
                    let disp = xfer_disp(k, bytes);
                    w.read_local(disp, &mut own)?;
                    let what = format!("own window after rank {}'s put of {bytes} B", b.source);
                    b.check(case, &what, &own, b.source, disp)?;
                }
            } else {
                for k in 0..ops {
                    let got = match c {
                        2 => owned[k].as_deref().ok_or("a buffer not given back")?,
                        _ => &local[k][..bytes],
                    };
                    let what = format!("get of {bytes} B from rank {to}");
                    b.check(case, &what, got, to, xfer_disp(k, bytes))?;
                }
            }
            b.report(case, bytes, &mut t)?;
        }
    }
    b.barrier()?;
    Ok(w.free()?)
}

fn atomic(b: &Bench) -> Result<()> {
    let reps = b.reps(1000);
    let total = (reps + (reps / 10).max(2)) as u64;
    let w = b.rma.allocate(&b.group, 64, RemoteAccess::ReadWrite)?;
    w.write_local(0, &[0u8; 64])?;
    b.barrier()?;
    let to = b.target;
    let fail = |case: &str, what: String| -> Result<()> {
        Err(format!("atomic {case}: rank {}: {what}", b.rank).into())
    };

    let all = w.lock_all(Assert::empty())?;
    let mut next = 0u64;
    let mut wrong = None;
    let mut t = b.timed(
        reps,
        1,
        || Ok(()),
        || {
            let old = all.fetch_and_op(to, 0, 1u64, Op::SUM)?;
            all.flush(to)?;
            if old != next {
                wrong.get_or_insert((next, old));
            }
            next += 1;
            Ok(())
        },
    )?;
    if let Some((e, f)) = wrong {
        fail("fetch_and_op_sum_u64", format!("expected {e} found {f}"))?;
    }
    b.report("fetch_and_op_sum_u64", 8, &mut t)?;

    let mut expected = 0u64;
    let mut t = b.timed(
        reps,
        1,
        || Ok(()),
        || {
            let old = all.compare_and_swap(to, 8, expected, expected + 1)?;
            all.flush(to)?;
            if old != expected {
                wrong.get_or_insert((expected, old));
            }
            expected += 1;
            Ok(())
        },
    )?;
    if let Some((e, f)) = wrong {
        fail("compare_and_swap_u64", format!("expected {e} found {f}"))?;
    }
    b.report("compare_and_swap_u64", 8, &mut t)?;

    let mut t = b.timed(
        reps,
        1,
        || Ok(()),
        || {
            all.accumulate(to, 16, &[1.0f64], Op::SUM)?;
            Ok(all.flush(to)?)
        },
    )?;
    b.report("accumulate_sum_f64", 8, &mut t)?;
    all.unlock()?;
    b.barrier()?;
    let mut counters = [0u64; 3];
    w.read_local(0, &mut counters)?;
    let sum = f64::from_bits(counters[2]);
    if counters[..2] != [total, total] || sum != total as f64 {
        fail(
            "final counters",
            format!(
                "{} {} {sum}, expected {total} each",
                counters[0], counters[1]
            ),
        )?;
    }
    b.barrier()?;
    Ok(w.free()?)
}

fn ibarrier(b: &Bench) -> Result<()> {
    let mut t = b.timed(
        b.reps(1000),
        1,
        || Ok(()),
        || Ok(b.rma.ibarrier(&b.group)?.wait()?),
    )?;
    b.report("ibarrier_wait", 0, &mut t)?;
    Ok(())
}

/// Nanoseconds of the host's real-time clock: a clock every process on
/// the host reads alike, as a number ranks can exchange (`Instant` has
/// none).
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The slowest warm-up from which collectives are timed after barriers
/// instead of from windows (1 ms).
const WINDOWED_UNDER_NS: u64 = 1_000_000;

/// The longest margin between the ranks' agreement and a repetition's
/// start (1 s).
const MAX_MARGIN_NS: u64 = 1_000_000_000;

/// How long before a repetition's start a rank sleeps instead of polling
/// the clock (2.1 ms; it wakes half of that before the start): more than any
/// first margin (twice a warm-up under [`WINDOWED_UNDER_NS`], plus 20 us),
/// so that only margins grown after late repetitions are slept through:
/// a repetition that starts right after its rank slept measures a core
/// back from idle, and which side of a case slept would depend on its
/// warm-up (measurements: `docs/measurements.md`, "Sleeping before a
/// repetition").
const SLEEP_ABOVE_NS: u64 = 2 * WINDOWED_UNDER_NS + 100_000;

/// Times `reps` repetitions of the collective `rep` after `warm` warm-up
/// ones (`prepare` runs before each, untimed): microseconds per
/// repetition, each the slowest rank's, and the algorithm the last one
/// ran (a call of `collective`).
///
/// Short collectives are timed from a common start, as ReproMPI does
/// (window-based): a barrier lets ranks go at different moments (MPICH's
/// lets the root of its gather-release tree go first, 0.1-0.2 us ahead),
/// which a rank's own interval would hide or count. Warm-up repetitions
/// (a tenth of the count before `--scale`, at least 2: see
/// [`collective_reps`]), each after a barrier, give the first margin
/// (twice the slowest, plus 20 us). Before each repetition the ranks
/// agree on the latest of their clocks (an allreduce); the repetition
/// starts one margin after it, at the same instant on every rank (the
/// host's clock), and takes until the slowest rank's end. A repetition
/// some rank reached after its start is dropped (all are kept if every
/// one is), and the next margin grows to twice the old one plus the
/// lateness, up to [`MAX_MARGIN_NS`]: ranks outnumbering the cores come
/// late by a time slice, and a fixed cadence let one late repetition make
/// the following ones late too, which either kept only the repetitions
/// that caught up or, every one late, counted the backlog in each
/// (measurements: `docs/measurements.md`, "Windowed timing"). Where the
/// slowest warm-up took [`WINDOWED_UNDER_NS`] or more, such skew does not
/// matter and margins would double the run: each repetition then starts
/// after a barrier, and a rank's time is its own interval.
fn windowed(
    comm: &onesided_collectives::Comm,
    collective: onesided_collectives::Collective,
    (reps, warm): (usize, usize),
    mut prepare: impl FnMut() -> Result<()>,
    mut rep: impl FnMut() -> Result<()>,
) -> Result<(Vec<f64>, &'static str)> {
    use onesided_collectives::Op;
    let max = |v: &[u64]| -> Result<Vec<u64>> {
        let mut out = vec![0u64; v.len()];
        comm.allreduce(v, &mut out, Op::MAX)?;
        Ok(out)
    };
    let mut longest = 0u64;
    for _ in 0..warm {
        prepare()?;
        comm.barrier()?;
        let start = wall_ns();
        rep()?;
        longest = longest.max(wall_ns().saturating_sub(start));
    }
    let longest = max(&[longest])?[0];
    let in_windows = longest < WINDOWED_UNDER_NS;
    let mut margin = 2 * longest + 20_000;
    let yielding =
        comm.group().size() as usize > std::thread::available_parallelism().map_or(1, |n| n.get());
    // Per repetition: how long after its start this rank ended, then
    // whether it came late (1).
    let mut mine = vec![0u64; 2 * reps];
    // How late this rank came to the last repetition.
    let mut lateness = 0u64;
    for i in 0..reps {
        prepare()?;
        if !in_windows {
            comm.barrier()?;
            let start = wall_ns();
            rep()?;
            mine[i] = wall_ns().saturating_sub(start);
            continue;
        }
        let agreed = max(&[wall_ns(), lateness])?;
        if agreed[1] > 0 {
            margin = (2 * margin + agreed[1]).min(MAX_MARGIN_NS);
        }
        let start = agreed[0] + margin;
        lateness = wall_ns().saturating_sub(start);
        mine[reps + i] = u64::from(lateness > 0);
        // A long margin (grown after late repetitions) is slept through
        // but for its last half millisecond: polling all of it would take
        // the cores from ranks still on their way.
        let left = start.saturating_sub(wall_ns());
        if left > SLEEP_ABOVE_NS {
            std::thread::sleep(std::time::Duration::from_nanos(left - SLEEP_ABOVE_NS / 2));
        }
        while wall_ns() < start {
            if yielding {
                std::thread::yield_now();
            }
        }
        rep()?;
        mine[i] = wall_ns().saturating_sub(start);
    }
    // What the repetitions ran (before the reduction below runs an
    // allreduce).
    let algorithm = comm.last_algorithm(collective).map_or("", |a| a.name());
    let all = max(&mine)?;
    let (slowest, late) = all.split_at(reps);
    let us = |(t, _): (&u64, &u64)| *t as f64 / 1e3;
    let kept: Vec<f64> = slowest
        .iter()
        .zip(late)
        .filter(|(_, l)| **l == 0)
        .map(us)
        .collect();
    if kept.is_empty() {
        return Ok((slowest.iter().zip(late).map(us).collect(), algorithm));
    }
    Ok((kept, algorithm))
}

/// The timed and warm-up repetitions of a collectives case of `base`
/// repetitions before `--scale`: the scale shrinks only the timed ones,
/// and a tenth of `base` (at least 2) warms up. onesided's shared-memory
/// collectives go through a ring of 8 cells, and a case may be the first
/// to use some of a cell's pages, or come after the other sides' turn,
/// which leaves the cells cold: the first calls are then slower, and the
/// warm-ups must outlast them (measurements: `docs/measurements.md`,
/// "Collective warm-ups").
fn collective_reps(b: &Bench, base: usize) -> (usize, usize) {
    (b.reps(base), (base / 10).max(2))
}

/// Sizes of the collectives suite (bytes per rank, or per pair for
/// alltoallv, which stops at 2 MiB).
const COLLECTIVE_SIZES: [usize; 8] = [8, 64, 512, 4096, 32768, 262_144, 2 << 20, 32 << 20];

/// The collectives suite: every case timed by [`windowed`] (a rep takes
/// until the slowest rank is done: a bcast's root alone is done first),
/// results checked, the algorithm onesided's calls ran printed as a
/// seventh field.
fn collectives(b: &Bench, world: &World) -> Result<()> {
    use onesided_collectives::{Buffers, Collective, Comm, Op};
    let comm = Comm::new(&b.rma, Group::world(world.size()))?;
    let n = world.size() as usize;
    let me = b.rank;
    let sum = Op::SUM;
    let wrong = |case: &str, bytes: usize, i: usize| -> Result<()> {
        Err(format!("collectives {case} {bytes}: rank {me} element {i} wrong").into())
    };
    let report = |case: &str, bytes: usize, (mut t, algorithm): (Vec<f64>, &str)| {
        b.report_chosen(case, bytes, &mut t, algorithm)
    };
    let nothing = || Ok(());
    let t = windowed(
        &comm,
        Collective::Barrier,
        collective_reps(b, 1000),
        nothing,
        || Ok(comm.barrier()?),
    )?;
    report("barrier", 0, t)?;
    for bytes in COLLECTIVE_SIZES {
        let count = bytes / 8;
        let reps = collective_reps(b, (16usize << 20).div_ceil(bytes).clamp(3, 200));
        let base: Vec<f64> = (0..count)
            .map(|i| ((i % 1000) + me as usize) as f64)
            .collect();
        let expect = |i: usize| (n * (i % 1000) + n * (n - 1) / 2) as f64;
        // bcast
        let buf = std::cell::RefCell::new(vec![0f64; count]);
        let rep = std::cell::Cell::new(0f64);
        let t = windowed(
            &comm,
            Collective::Bcast,
            reps,
            || {
                rep.set(rep.get() + 1.0);
                let value = if me == 0 { rep.get() } else { 0.0 };
                buf.borrow_mut().fill(value);
                Ok(())
            },
            || Ok(comm.bcast(0, &mut buf.borrow_mut())?),
        )?;
        if let Some(i) = buf.borrow().iter().position(|v| *v != rep.get()) {
            wrong("bcast", bytes, i)?;
        }
        report("bcast", bytes, t)?;
        // reduce, allreduce, iallreduce
        let mut out = vec![0f64; count];
        let t = windowed(&comm, Collective::Reduce, reps, nothing, || {
            Ok(comm.reduce(0, &base, &mut out, sum.clone())?)
        })?;
        if me == 0 {
            if let Some(i) = (0..count).find(|&i| out[i] != expect(i)) {
                wrong("reduce", bytes, i)?;
            }
        }
        report("reduce", bytes, t)?;
        let t = windowed(&comm, Collective::Allreduce, reps, nothing, || {
            Ok(comm.allreduce(&base, &mut out, sum.clone())?)
        })?;
        if let Some(i) = (0..count).find(|&i| out[i] != expect(i)) {
            wrong("allreduce", bytes, i)?;
        }
        report("allreduce", bytes, t)?;
        // The nonblocking call owns its buffers while in flight (handed in
        // and back: no copies), as MPI_Iallreduce works on the caller's.
        let mut handed = Buffers {
            input: base.clone(),
            output: out,
        };
        let t = windowed(&comm, Collective::Allreduce, reps, nothing, || {
            let Buffers { input, output } = std::mem::take(&mut handed);
            handed = comm
                .iallreduce(input, output, sum.clone())?
                .into_buffers()?;
            Ok(())
        })?;
        let out = handed.output;
        if let Some(i) = (0..count).find(|&i| out[i] != expect(i)) {
            wrong("iallreduce", bytes, i)?;
        }
        report("iallreduce", bytes, t)?;
        // allgather
        let counts = vec![count; n];
        let mut all = vec![0f64; count * n];
        let t = windowed(&comm, Collective::Allgather, reps, nothing, || {
            Ok(comm.allgatherv(&base, &mut all, &counts)?)
        })?;
        if let Some(i) = (0..count * n)
            .find(|&i| all[i] != ((i % count.max(1)) % 1000 + i / count.max(1)) as f64)
        {
            wrong("allgather", bytes, i)?;
        }
        report("allgather", bytes, t)?;
        // alltoallv, equal counts
        if bytes <= 2 << 20 {
            let input: Vec<f64> = (0..count * n)
                .map(|k| {
                    (me as usize * 7 + (k / count.max(1)) * 3 + (k % count.max(1)) % 100) as f64
                })
                .collect();
            let mut output = vec![0f64; count * n];
            let t = windowed(&comm, Collective::Alltoall, reps, nothing, || {
                Ok(comm.alltoallv(&input, &counts, &mut output, &counts)?)
            })?;
            if let Some(i) = (0..count * n).find(|&k| {
                output[k]
                    != ((k / count.max(1)) * 7 + me as usize * 3 + (k % count.max(1)) % 100) as f64
            }) {
                wrong("alltoallv", bytes, i)?;
            }
            report("alltoallv", bytes, t)?;
        }
    }
    Ok(())
}
