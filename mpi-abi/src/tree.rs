//! Reductions by a program's operation on a derived datatype
//! (`MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`, `MPI_Ireduce`,
//! `MPI_Iallreduce`): the operation's function counts elements of the
//! datatype and reads them where the datatype places them, so the vector
//! is never split (onesided's collectives split vectors at element
//! boundaries of their own).
//!
//! A binomial tree towards rank 0 over point-to-point, in rank order (the
//! lower ranks' operand always on the left, as a non-commutative
//! operation needs), then the result to the root (`Reduce`) or down the
//! same tree (`Allreduce`); `Reduce_scatter` scatters it from rank 0. The
//! steps are a pure schedule ([`schedule`]); a [`Tree`] takes them as
//! their messages arrive. The nonblocking forms send their first messages
//! when they start and are kept in one table that every wait and test of
//! any request, and every point-to-point wait, advances whole; the
//! blocking ones wait for the same. Each reduction
//! draws a number from its communicator's count of them, which its tags
//! carry: reductions outstanding together never take each other's
//! messages, whatever order the program completes them in.
//!
//! Cost in p: ceil(log2 p) rounds of one whole vector towards rank 0 (p-1
//! messages in all), then one message to a root, or ceil(log2 p) rounds
//! down (p-1 messages); memory two vectors in the datatype's layout and
//! one packed per message in flight.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use onesided::fabric::fnv::FastMap;

use onesided::rma::Group;

use crate::abi::{err, Handle};
use crate::coll::in_place;
use crate::derived;
use crate::errors::Fail;
use crate::op::UserOp;
use crate::p2p::{self, Pattern, Route};
use crate::runtime::{self, CommEntry};
use crate::typemap::TypeMap;

/// The tag that numbers these reductions' context apart from the
/// communicator's.
const TREE_CONTEXT: u64 = 0x7ee;

/// The point-to-point context of communicator `c`'s tree reductions.
pub(crate) fn context(c: &CommEntry) -> u64 {
    c.objects.tagged(TREE_CONTEXT).key()
}

/// The program's operation `op`, when it is one.
pub(crate) fn user_op(op: Handle) -> Option<UserOp> {
    runtime::with(|r| Ok(r.ops.get(op).copied())).ok().flatten()
}

/// The partner of `rank` of `n` in round `mask` of a binomial reduction
/// to rank 0: `Some((partner, sends))`, `None` once it has nothing left
/// to do in that round.
pub(crate) fn round(n: u32, rank: u32, mask: u32) -> Option<(u32, bool)> {
    if rank & mask != 0 {
        return Some((rank - mask, true));
    }
    (rank + mask < n).then_some((rank + mask, false))
}

/// What a step's message is: a round of the tree towards rank 0 (its
/// number), the result to the root, or a round down the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Stage {
    Up(u32),
    ToRoot,
    Down,
}

impl Stage {
    /// The tag of this stage's message in reduction number `seq`.
    fn tag(self, seq: u32) -> i32 {
        let stage = match self {
            Stage::Up(round) => round,
            Stage::ToRoot => 32,
            Stage::Down => 33,
        };
        // 24 bits of the number and 6 of the stage: below 2^30.
        (((seq & 0xff_ffff) << 6) | stage) as i32
    }
}

/// A step of a rank in a tree reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Receives a vector from rank `from`: combined into this rank's,
    /// whose operand is on the left (`from` is higher), or else taken as
    /// the result.
    Recv {
        from: u32,
        stage: Stage,
        combine: bool,
    },
    /// Sends this rank's vector to rank `to`.
    Send { to: u32, stage: Stage },
}

/// Rank `me`'s steps of a reduction over `n` ranks whose result goes to
/// `root` (to every rank for `None`).
pub(crate) fn schedule(n: u32, me: u32, root: Option<u32>) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut mask = 1u32;
    let mut round_no = 0;
    while mask < n {
        match round(n, me, mask) {
            Some((to, true)) => {
                steps.push(Step::Send {
                    to,
                    stage: Stage::Up(round_no),
                });
                break;
            }
            Some((from, false)) => steps.push(Step::Recv {
                from,
                stage: Stage::Up(round_no),
                combine: true,
            }),
            None => {}
        }
        mask <<= 1;
        round_no += 1;
    }
    match root {
        Some(0) => {}
        Some(r) if me == 0 => steps.push(Step::Send {
            to: r,
            stage: Stage::ToRoot,
        }),
        Some(r) if me == r => steps.push(Step::Recv {
            from: 0,
            stage: Stage::ToRoot,
            combine: false,
        }),
        Some(_) => {}
        None => {
            // Down the same tree: from the parent (the rank this one sent
            // to), then to the children, the farthest first.
            let low = if me == 0 {
                n.next_power_of_two()
            } else {
                me & me.wrapping_neg()
            };
            if me != 0 {
                steps.push(Step::Recv {
                    from: me - low,
                    stage: Stage::Down,
                    combine: false,
                });
            }
            let mut mask = low >> 1;
            while mask > 0 {
                if me + mask < n {
                    steps.push(Step::Send {
                        to: me + mask,
                        stage: Stage::Down,
                    });
                }
                mask >>= 1;
            }
        }
    }
    steps
}

/// `count` elements of a datatype in its own layout: what the program's
/// function reads and writes.
pub(crate) struct Typed {
    storage: Vec<u8>,
    /// The offset of element 0 in `storage` (the type's true lower bound,
    /// negated).
    origin: usize,
}

impl Typed {
    /// Room for `count` elements of `map`, zero.
    pub(crate) fn new(map: &TypeMap, count: usize) -> Typed {
        let span = match count {
            0 => 0,
            k => (k as isize - 1) * map.extent() + map.true_ub - map.true_lb,
        };
        Typed {
            storage: vec![0u8; span.max(0) as usize],
            origin: (-map.true_lb).max(0) as usize,
        }
    }

    /// Element 0's address.
    pub(crate) fn base(&mut self) -> *mut u8 {
        self.storage.as_mut_ptr().wrapping_add(self.origin)
    }
}

/// A tree reduction in flight: its schedule, the step it is at, the
/// vectors it combines and the messages it has out.
pub(crate) struct Tree {
    ctx: u64,
    group: Group,
    me: u32,
    seq: u32,
    steps: Vec<Step>,
    next: usize,
    /// The receive of the current step, once posted, into `incoming`.
    posted: Option<u64>,
    incoming: Vec<u8>,
    /// Sends not known to be done, and their data.
    sends: Vec<(u64, Vec<u8>)>,
    map: Arc<TypeMap>,
    count: usize,
    len: c_int,
    datatype: Handle,
    op: UserOp,
    acc: Typed,
    other: Typed,
    /// The program's buffer the result goes to (at the ranks it goes
    /// to), when it goes to one.
    out: Option<usize>,
}

// SAFETY: `out` is the address of the program's buffer, which only
// `finish` writes, under its contract; the rest is owned data. The
// engine's requests that point into `incoming` and the sends' data are
// reached through the engine's lock.
unsafe impl Send for Tree {}

impl Tree {
    /// Starts reducing `count` elements of derived `datatype` at `send`
    /// (at `recv` for `MPI_IN_PLACE`) by the program's operation `op`
    /// over `c`, towards `root` (every rank for `None`); the result goes
    /// to `recv` there when `to_program`, else stays (`packed`).
    ///
    /// # Safety
    /// The send buffer (or, in place, the receive buffer) holds `count`
    /// elements of the datatype.
    pub(crate) unsafe fn start(
        c: &CommEntry,
        (send, recv): (*const c_void, *mut c_void),
        (count, datatype): (usize, Handle),
        (op, root): (UserOp, Option<u32>),
        to_program: bool,
    ) -> Result<Tree, Fail> {
        let map = derived::committed(datatype)?;
        derived::bytes_of(&map, count)?;
        let len =
            c_int::try_from(count).map_err(|_| Fail::new(err::COUNT, "over 2^31 elements"))?;
        let from = if in_place(send) {
            recv.cast_const()
        } else {
            send
        };
        let (n, me) = (c.size(), c.rank);
        let mut acc = Typed::new(&map, count);
        // SAFETY: as this function's contract.
        let packed = unsafe { derived::pack(&map, from.cast(), count) };
        // SAFETY: acc holds count elements in the datatype's layout.
        unsafe { derived::unpack(&map, &packed, acc.base(), count) };
        let gets_result = root.is_none_or(|r| r == me);
        Ok(Tree {
            ctx: context(c),
            group: c.group.clone(),
            me,
            seq: c.trees.fetch_add(1, Ordering::Relaxed),
            steps: schedule(n, me, root),
            next: 0,
            posted: None,
            incoming: vec![0u8; packed.len()],
            sends: Vec::new(),
            other: Typed::new(&map, count),
            map,
            count,
            len,
            datatype,
            op,
            acc,
            out: (to_program && gets_result).then_some(recv as usize),
        })
    }

    /// Takes the steps whose messages have come; whether all are done
    /// (their sends too).
    ///
    /// # Errors
    /// The engine's; `MPI_ERR_TRUNCATE` for a longer message.
    pub(crate) fn advance(&mut self) -> Result<bool, Fail> {
        loop {
            match self.steps.get(self.next).copied() {
                None => return self.sent(),
                Some(Step::Send { to, stage }) => {
                    self.send(to, stage)?;
                    self.next += 1;
                }
                Some(Step::Recv {
                    from,
                    stage,
                    combine,
                }) => {
                    if !self.received(from, stage)? {
                        return Ok(false);
                    }
                    self.take(combine);
                    self.next += 1;
                }
            }
        }
    }

    /// Sends this rank's vector to rank `to`.
    fn send(&mut self, to: u32, stage: Stage) -> Result<(), Fail> {
        let route = Route {
            ctx: self.ctx,
            to: self.group.job_rank(to)?,
            source: self.me,
            tag: stage.tag(self.seq),
        };
        // SAFETY: acc holds count elements in the layout.
        let data = unsafe { derived::pack(&self.map, self.acc.base(), self.count) };
        // SAFETY: the data stays in `sends` (its heap buffer does not
        // move) until the send is done or given up (`Drop`).
        let id = p2p::with(|e| unsafe { e.send(route, (data.as_ptr(), data.len()), false) })?;
        if let Some(id) = id {
            self.sends.push((id, data));
        }
        Ok(())
    }

    /// Whether the vector from rank `from` has come into `incoming`
    /// (its receive posted first).
    fn received(&mut self, from: u32, stage: Stage) -> Result<bool, Fail> {
        let id = match self.posted {
            Some(id) => id,
            None => {
                let pattern = Pattern {
                    source: Some(from),
                    tag: Some(stage.tag(self.seq)),
                };
                let into = (self.incoming.as_mut_ptr(), self.incoming.len());
                let members = self.group.members();
                // SAFETY: `incoming` is not touched (nor moved: a heap
                // buffer) until the receive is done or given up (`Drop`).
                let id = p2p::with(|e| unsafe { e.recv(self.ctx, pattern, into, members) })?;
                self.posted = Some(id);
                id
            }
        };
        let Some(got) = p2p::poll(|e| e.recv_done(id))? else {
            return Ok(false);
        };
        self.posted = None;
        match got?.class {
            err::SUCCESS => Ok(true),
            class => Err(Fail::new(class, "a reduction's message did not fit")),
        }
    }

    /// Combines the vector received into this rank's (or takes it).
    fn take(&mut self, combine: bool) {
        if !combine {
            // SAFETY: acc holds count elements in the layout.
            unsafe { derived::unpack(&self.map, &self.incoming, self.acc.base(), self.count) };
            return;
        }
        // SAFETY: other holds count elements in the layout.
        unsafe { derived::unpack(&self.map, &self.incoming, self.other.base(), self.count) };
        // The program's function computes inoutvec = invec op inoutvec:
        // the lower ranks' operand (acc) is invec.
        // SAFETY: two buffers of count elements of the datatype.
        unsafe {
            (self.op).call(
                self.acc.base().cast(),
                self.other.base().cast(),
                self.len,
                self.datatype,
            )
        };
        std::mem::swap(&mut self.acc, &mut self.other);
    }

    /// Whether every send is done.
    fn sent(&mut self) -> Result<bool, Fail> {
        let sends = &mut self.sends;
        let done = p2p::poll(|e| {
            let mut failed = None;
            sends.retain(|(id, _)| match e.send_done(*id) {
                None => true,
                Some(outcome) => {
                    failed = failed.take().or(outcome.err());
                    false
                }
            });
            match failed {
                Some(fail) => Some(Err(fail)),
                None => sends.is_empty().then_some(Ok(true)),
            }
        })?;
        done.unwrap_or(Ok(false))
    }

    /// Waits until every step is done.
    ///
    /// # Errors
    /// As [`Tree::advance`].
    pub(crate) fn wait(&mut self) -> Result<(), Fail> {
        p2p::until(|| self.advance())
    }

    /// The result, packed (at the ranks it goes to; zeros elsewhere).
    pub(crate) fn packed(&mut self) -> Vec<u8> {
        // SAFETY: acc holds count elements in the layout.
        unsafe { derived::pack(&self.map, self.acc.base(), self.count) }
    }

    /// Writes the result into the program's buffer (where it goes to
    /// one), once every step is done.
    ///
    /// # Safety
    /// That buffer holds `count` elements of the datatype (MPI: it stays
    /// valid until the reduction completes).
    pub(crate) unsafe fn finish(mut self) {
        if let Some(out) = self.out {
            let packed = self.packed();
            // SAFETY: as this function's contract.
            unsafe { derived::unpack(&self.map, &packed, out as *mut u8, self.count) };
        }
    }
}

impl Drop for Tree {
    /// Gives up what is still posted: nothing refers to `incoming` or the
    /// sends' data once it is dropped.
    fn drop(&mut self) {
        let ids = self
            .posted
            .iter()
            .chain(self.sends.iter().map(|(id, _)| id));
        for &id in ids {
            p2p::abandon(id);
        }
    }
}

/// A nonblocking reduction in flight, and how it stands.
struct InFlight {
    tree: Tree,
    done: bool,
    failed: Option<Fail>,
}

/// The process's nonblocking tree reductions by number: every wait and
/// test of any request, and every point-to-point wait, advances them all
/// ([`advance_all`]), so that ranks may complete them in any order (a
/// rank waiting for one still sends the messages its peers wait for in
/// another).
static IN_FLIGHT: Mutex<Option<(u64, FastMap<u64, InFlight>)>> = Mutex::new(None);

fn in_flight() -> MutexGuard<'static, Option<(u64, FastMap<u64, InFlight>)>> {
    IN_FLIGHT.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts `tree` as a nonblocking reduction (its first messages go now);
/// its number, for [`test`] and [`finish`].
pub(crate) fn start(mut tree: Tree) -> u64 {
    let (done, failed) = match tree.advance() {
        Ok(done) => (done, None),
        Err(fail) => (false, Some(fail)),
    };
    let mut guard = in_flight();
    let (next, trees) = guard.get_or_insert_with(Default::default);
    *next += 1;
    trees.insert(*next, InFlight { tree, done, failed });
    *next
}

/// Advances every nonblocking reduction in flight; a failure is kept for
/// its own request.
pub(crate) fn advance_all() {
    let mut guard = in_flight();
    let Some((_, trees)) = guard.as_mut() else {
        return;
    };
    for t in trees.values_mut().filter(|t| !t.done && t.failed.is_none()) {
        match t.tree.advance() {
            Ok(done) => t.done = done,
            Err(fail) => t.failed = Some(fail),
        }
    }
}

/// Whether nonblocking reduction `id` is done (its callers advance them
/// all first: `request.rs`'s tests, [`p2p::until`]).
///
/// # Errors
/// Its failure; `MPI_ERR_REQUEST` for no such reduction.
pub(crate) fn test(id: u64) -> Result<bool, Fail> {
    let guard = in_flight();
    match guard.as_ref().and_then(|(_, trees)| trees.get(&id)) {
        Some(InFlight {
            failed: Some(fail), ..
        }) => Err(fail.clone()),
        Some(t) => Ok(t.done),
        None => Err(Fail::new(err::REQUEST, format!("no reduction {id}"))),
    }
}

/// Waits for nonblocking reduction `id`, then writes its result into the
/// program's buffer; it is gone after (also when it failed).
///
/// # Errors
/// As [`test`].
///
/// # Safety
/// As [`Tree::finish`].
pub(crate) unsafe fn finish(id: u64) -> Result<(), Fail> {
    let waited = p2p::until(|| test(id));
    let entry = in_flight()
        .as_mut()
        .and_then(|(_, trees)| trees.remove(&id));
    waited?;
    match entry {
        // SAFETY: as this function's contract.
        Some(t) => unsafe { t.tree.finish() },
        None => return Err(Fail::new(err::REQUEST, format!("no reduction {id}"))),
    }
    Ok(())
}

/// Drops the reductions still in flight (`MPI_Finalize`): what they
/// posted is given up.
pub(crate) fn forget_all() {
    drop(in_flight().take());
}

/// Reduces `count` elements of derived `datatype` at `send` (at `recv`
/// for `MPI_IN_PLACE`) by the program's operation `op` over `c`, into
/// `recv` at `root` (everywhere when `None`).
///
/// # Safety
/// The buffers hold `count` elements of the datatype where the call
/// reads and writes them.
pub(crate) unsafe fn reduce(
    c: &CommEntry,
    buffers: (*const c_void, *mut c_void),
    (count, datatype): (usize, Handle),
    (op, root): (UserOp, Option<u32>),
) -> Result<(), Fail> {
    // SAFETY: as this function's contract.
    let mut tree = unsafe { Tree::start(c, buffers, (count, datatype), (op, root), true) }?;
    tree.wait()?;
    // SAFETY: as this function's contract.
    unsafe { tree.finish() };
    Ok(())
}

/// Reduces as [`reduce`] to rank 0, then scatters block `r` (`counts[r]`
/// elements of the datatype, one after the other) to rank `r`'s `recv`
/// (`MPI_Reduce_scatter`).
///
/// # Safety
/// The send buffer (or, in place, the receive buffer) holds the counts'
/// total; the receive buffer this rank's count.
pub(crate) unsafe fn reduce_scatter(
    c: &CommEntry,
    buffers: (*const c_void, *mut c_void),
    (counts, datatype): (&[usize], Handle),
    op: UserOp,
) -> Result<(), Fail> {
    let map = derived::committed(datatype)?;
    let total = counts.iter().try_fold(0usize, |t, &k| t.checked_add(k));
    let total = total.ok_or_else(|| Fail::new(err::COUNT, "counts past what an address holds"))?;
    derived::bytes_of(&map, total)?;
    // SAFETY: as this function's contract.
    let mut tree = unsafe { Tree::start(c, buffers, (total, datatype), (op, Some(0)), false) }?;
    tree.wait()?;
    let whole = tree.packed();
    let bytes: Vec<usize> = counts.iter().map(|&k| k * map.size).collect();
    let mine = counts[c.rank as usize];
    let mut block = vec![0u8; mine * map.size];
    let input = if c.rank == 0 { &whole[..] } else { &[][..] };
    c.lock().scatterv(0, input, &mut block, &bytes)?;
    // SAFETY: as this function's contract.
    unsafe { derived::unpack(&map, &block, buffers.1.cast(), mine) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Runs every rank's schedule with strings for vectors (concatenation
    /// is not commutative); the ranks' vectors at the end, and the
    /// messages sent.
    fn simulate(n: u32, root: Option<u32>) -> (Vec<String>, usize) {
        let mut vecs: Vec<String> = (0..n).map(|r| format!("{r},")).collect();
        let steps: Vec<Vec<Step>> = (0..n).map(|r| schedule(n, r, root)).collect();
        let mut at = vec![0usize; n as usize];
        let mut wire: HashMap<(u32, u32, Stage), Vec<String>> = HashMap::new();
        let mut messages = 0;
        loop {
            let mut moved = false;
            for r in 0..n {
                let i = r as usize;
                match steps[i].get(at[i]) {
                    Some(&Step::Send { to, stage }) => {
                        wire.entry((r, to, stage))
                            .or_default()
                            .push(vecs[i].clone());
                        messages += 1;
                    }
                    Some(&Step::Recv {
                        from,
                        stage,
                        combine,
                    }) => {
                        let Some(v) = wire.get_mut(&(from, r, stage)).and_then(|q| q.pop()) else {
                            continue;
                        };
                        vecs[i] = if combine {
                            format!("{}{v}", vecs[i])
                        } else {
                            v
                        };
                    }
                    None => continue,
                }
                at[i] += 1;
                moved = true;
            }
            if !moved {
                break;
            }
        }
        for r in 0..n as usize {
            assert_eq!(at[r], steps[r].len(), "n {n} rank {r} stuck");
        }
        assert!(
            wire.values().all(Vec::is_empty),
            "n {n}: a message nobody took"
        );
        (vecs, messages)
    }

    #[test]
    fn every_schedule_combines_every_rank_in_order_where_the_result_goes() {
        for n in 1..=9u32 {
            let want: String = (0..n).map(|r| format!("{r},")).collect();
            let (vecs, messages) = simulate(n, None);
            assert!(vecs.iter().all(|v| *v == want), "n {n}: {vecs:?}");
            assert_eq!(messages, 2 * (n as usize - 1), "n {n}");
            for root in 0..n {
                let (vecs, messages) = simulate(n, Some(root));
                assert_eq!(vecs[root as usize], want, "n {n} root {root}");
                let extra = usize::from(root != 0);
                assert_eq!(messages, n as usize - 1 + extra, "n {n} root {root}");
            }
        }
    }

    #[test]
    fn rounds_are_logarithmic_and_tags_apart() {
        for n in [2u32, 3, 8, 9, 1000] {
            let depth = n.next_power_of_two().trailing_zeros() as usize;
            for r in 0..n {
                let steps = schedule(n, r, None);
                let up = steps
                    .iter()
                    .filter(|s| {
                        matches!(
                            s,
                            Step::Recv {
                                stage: Stage::Up(_),
                                ..
                            } | Step::Send {
                                stage: Stage::Up(_),
                                ..
                            }
                        )
                    })
                    .count();
                assert!(up <= depth, "n {n} rank {r}");
                assert!(steps.len() <= 2 * depth + 1, "n {n} rank {r}");
            }
        }
        let stages = [Stage::Up(0), Stage::Up(31), Stage::ToRoot, Stage::Down];
        let tags: std::collections::HashSet<i32> = [0u32, 1, 0xff_ffff]
            .iter()
            .flat_map(|&seq| stages.iter().map(move |s| s.tag(seq)))
            .collect();
        assert_eq!(tags.len(), 12);
        assert!(tags.iter().all(|&t| t >= 0));
    }
}
