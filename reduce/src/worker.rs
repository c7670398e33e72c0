//! The worker's side of the protocol, pure: [`Worker`] holds what one
//! process knows of its reductions (their rounds, lines, replicas and
//! outcomes, the work queued for its executor and writer, the ring it
//! watches) and decides what follows from each event, beside
//! [`crate::master::Master`] (quinn-proto's way). The driver
//! ([`crate::reducer`]) owns the threads and the I/O: it feeds the
//! worker the messages, the clock and what its fetches, files and
//! registrations gave, and sends what the worker answers.
//!
//! Memory per process: one entry per reduction in flight here (its
//! working copies, one per line it holds), a ring of the group's size,
//! the pooled copies; no state per peer beyond the ring.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use onesided_fabric::MemoryRegion;

use crate::buffer::{Aligned, Buffer, Pool};
use crate::message::{Key, Message};
use crate::ring::Ring;
use crate::schedule::Failure;
use crate::Error;

/// The root's own line: never attached (no one reads it), so no
/// attachment's displacement (those are `k << 40`, k >= 1).
pub(crate) const ROOT_LINE: u64 = 0;

/// Combines a line (its bytes) into another.
pub(crate) type Combine = Arc<dyn Fn(&mut [u8], &[u8]) + Send + Sync>;

/// One process's state of its reductions.
pub(crate) struct Worker {
    /// Its group rank.
    me: u32,
    /// The group's size.
    size: u32,
    work: VecDeque<Work>,
    pub(crate) reductions: HashMap<Key, Reduction>,
    /// Rounds started per id.
    rounds: HashMap<u64, u32>,
    /// Outcomes that came before this process started the reduction.
    early: HashMap<Key, Outcome>,
    /// Work for reductions not started here yet: done at their start.
    deferred: HashMap<Key, Vec<Work>>,
    /// The writer thread's work.
    writes: VecDeque<Write>,
    pub(crate) pool: Pool,
    /// Who this process watches and pings.
    pub(crate) ring: Ring,
    /// The master was seen dead: every reduction fails.
    master_dead: bool,
    /// Ranks the master said failed.
    dead: Vec<u32>,
    closing: bool,
}

/// The executor's work.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Work {
    /// Expose and contribute this process's data.
    Start(Key),
    /// A message from a group rank, for the executor.
    Message(u32, Message),
}

/// The writer thread's work: files, off the reduction's path.
pub(crate) enum Write {
    /// Write and sync `owner`'s replica, then tell it.
    Keep { key: Key, owner: u32, copy: Aligned },
    /// Remove every file of an ended reduction on this host.
    Remove(Key),
}

/// What a thread does next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next<T> {
    Do(T),
    /// Nothing to do: wait for a change.
    Wait,
    /// The reducer closes: the thread ends.
    Close,
}

/// What a task takes to combine into a line.
pub(crate) struct TaskLine {
    /// The line's working copy (none before its first task).
    pub(crate) copy: Option<Box<dyn Buffer>>,
    pub(crate) combine: Combine,
    /// The line's length in bytes.
    pub(crate) len: usize,
}

/// This process's data, as the call left it for the executor.
pub(crate) enum Original {
    /// The root's: the working copy the result grows in, given back by
    /// the future without a copy.
    Root(Box<dyn Buffer>),
    /// Another's: its line, filled, and when the group spans hosts a
    /// second copy, which its replica is read from (a task writes the line
    /// in place).
    Line(Arc<MemoryRegion>, Option<Arc<MemoryRegion>>),
}

/// One reduction on this process.
pub(crate) struct Reduction {
    pub(crate) root: u32,
    len: usize,
    combine: Combine,
    /// This process's original data, until the executor starts it.
    original: Option<Original>,
    /// Its own line's displacement, once exposed.
    own: Option<u64>,
    /// Working copies of lines held here, by displacement: a task
    /// combines into one (a region hands out no slice) and writes it back
    /// to the line's region. Made at a line's first task.
    pub(crate) lines: HashMap<u64, Box<dyn Buffer>>,
    /// Its original data's displacement, where its replica is read from.
    source: Option<u64>,
    /// Where the replica of this process's data is.
    replica: Replica,
    /// Whether the call returned (its file and replica written).
    returned: bool,
    pub(crate) outcome: Outcome,
    /// Its future was dropped before the end: it goes at the end.
    abandoned: bool,
}

/// The replica of this process's original data, on the next live member
/// on another host ([`crate::schedule::replica_holder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replica {
    /// Not asked for yet.
    Pending,
    /// Asked of this holder.
    Asked(u32),
    /// Durable on `holder`.
    Durable(u32),
    /// None: this is the root, or every live member shares this host
    /// (the file here serves).
    Nowhere,
    /// `holder` could not store it (its disk full or unwritable): the
    /// call fails.
    Refused(u32),
}

impl Replica {
    /// Whether the call still waits for it.
    fn waits(self) -> bool {
        matches!(self, Replica::Pending | Replica::Asked(_))
    }
}

/// How a reduction stands here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Running,
    /// Its result is in the line at this displacement (of the root).
    Finished(u64),
    Failed(Failure),
}

impl Worker {
    /// The state of group rank `me` of `size`, whose ring counts no
    /// silence before `start`.
    pub(crate) fn new(me: u32, size: u32, start: Instant) -> Worker {
        Worker {
            me,
            size,
            work: VecDeque::new(),
            reductions: HashMap::new(),
            rounds: HashMap::new(),
            early: HashMap::new(),
            deferred: HashMap::new(),
            writes: VecDeque::new(),
            pool: Pool::default(),
            ring: Ring::new(me, size, start),
            master_dead: false,
            dead: Vec::new(),
            closing: false,
        }
    }

    /// The key of the next reduction of `id` here.
    ///
    /// # Errors
    /// [`Error::Usage`] while the previous one is still here.
    pub(crate) fn next_key(&self, id: u64) -> Result<Key, Error> {
        let round = self.rounds.get(&id).copied().unwrap_or(0);
        let previous = Key {
            id,
            round: round.wrapping_sub(1),
        };
        match round > 0 && self.reductions.contains_key(&previous) {
            true => Err(Error::Usage(format!(
                "reduction {id} is still in flight here"
            ))),
            false => Ok(Key { id, round }),
        }
    }

    /// Round `key` is used without a reduction here (its data could not
    /// be exposed; the master hears it was withdrawn).
    pub(crate) fn skip(&mut self, key: Key) {
        self.rounds.insert(key.id, key.round + 1);
    }

    /// Reduction `key` of `len` bytes, to `root`, starts here from
    /// `original`: the executor starts it, then does the work that came
    /// for it before. It begins ended when its outcome came first, failed
    /// when the master is dead.
    ///
    /// # Errors
    /// [`Error::Usage`] when another thread started round `key` meanwhile
    /// (nothing changes).
    pub(crate) fn begin(
        &mut self,
        key: Key,
        root: u32,
        len: usize,
        combine: Combine,
        original: Original,
    ) -> Result<(), Error> {
        if self.rounds.get(&key.id).copied().unwrap_or(0) != key.round {
            return Err(Error::Usage(format!(
                "reduction {} was started meanwhile by another thread",
                key.id
            )));
        }
        self.rounds.insert(key.id, key.round + 1);
        let early = self.early.remove(&key).unwrap_or(Outcome::Running);
        let outcome = match self.master_dead {
            true => Outcome::Failed(Failure::MasterDied(0)),
            false => early,
        };
        let is_root = self.me == root;
        let reduction = Reduction {
            root,
            len,
            combine,
            original: Some(original),
            own: None,
            lines: HashMap::new(),
            replica: match is_root {
                true => Replica::Nowhere,
                false => Replica::Pending,
            },
            source: None,
            returned: is_root,
            outcome,
            abandoned: false,
        };
        self.reductions.insert(key, reduction);
        self.work.push_back(Work::Start(key));
        let deferred = self.deferred.remove(&key).unwrap_or_default();
        self.work.extend(deferred);
        Ok(())
    }

    /// A message from group rank `from` to the workers' service at `now`:
    /// the sender is alive; a ping says nothing else; a death moves the
    /// ring at once (the master's fails every reduction); an answer to a
    /// replica asked for is taken here (the call waits for it, and the
    /// executor may wait for the call); the rest is work for the
    /// executor. Whether the state changed (waiters to wake).
    pub(crate) fn receive(&mut self, from: u32, message: Message, now: Instant) -> bool {
        self.ring.heard(from, now);
        match message {
            Message::Ping => return false,
            Message::Dead { rank } => {
                self.ring.died(rank, now);
                if rank == 0 {
                    self.master_lost();
                }
            }
            Message::Stored { key, ok } => {
                if let Some(r) = self.reductions.get_mut(&key) {
                    if r.replica == Replica::Asked(from) && r.outcome == Outcome::Running {
                        r.replica = match ok {
                            true => Replica::Durable(from),
                            false => Replica::Refused(from),
                        };
                    }
                }
                return true;
            }
            _ => {}
        }
        self.work.push_back(Work::Message(from, message));
        true
    }

    /// The executor's next work. Keeping another's replica waits for the
    /// rest: it is off the reductions' path.
    pub(crate) fn next_work(&mut self) -> Next<Work> {
        if self.closing {
            return Next::Close;
        }
        let first = (self.work.iter())
            .position(|w| !matches!(w, Work::Message(_, Message::Store { .. })))
            .unwrap_or(0);
        match self.work.remove(first) {
            Some(work) => Next::Do(work),
            None => Next::Wait,
        }
    }

    /// The writer's next work. Once the reducer closes, only removals
    /// (a file it had not written is of no use).
    pub(crate) fn next_write(&mut self) -> Next<Write> {
        if self.closing {
            self.writes.retain(|w| matches!(w, Write::Remove(_)));
        }
        match (self.writes.pop_front(), self.closing) {
            (Some(write), _) => Next::Do(write),
            (None, true) => Next::Close,
            (None, false) => Next::Wait,
        }
    }

    /// Queues work for the writer.
    pub(crate) fn write(&mut self, write: Write) {
        self.writes.push_back(write);
    }

    /// The reducer closes: its threads end.
    pub(crate) fn close(&mut self) {
        self.closing = true;
    }

    /// Keeps `m` from `from` for the start of its reduction when it needs
    /// the reduction and that has not started here (`None`); else gives it
    /// back to be handled now.
    pub(crate) fn defer(&mut self, from: u32, m: Message) -> Option<Message> {
        let key = match &m {
            Message::Task { key, .. }
            | Message::Reload { key, .. }
            | Message::Replicate { key, .. } => *key,
            _ => return Some(m),
        };
        if self.reductions.contains_key(&key) {
            return Some(m);
        }
        let deferred = self.deferred.entry(key).or_default();
        deferred.push(Work::Message(from, m));
        None
    }

    /// Whether reduction `key` ended here (or started and went).
    pub(crate) fn ended(&self, key: Key) -> bool {
        match self.reductions.get(&key) {
            Some(r) => r.outcome != Outcome::Running,
            None => {
                self.early.contains_key(&key)
                    || key.round < self.rounds.get(&key.id).copied().unwrap_or(0)
            }
        }
    }

    /// Whether work for reduction `key` is of no use: it ended here, or
    /// the reducer closes.
    pub(crate) fn needless(&self, key: Key) -> bool {
        self.closing || self.ended(key)
    }

    /// Whether reduction `key` is here and still running.
    pub(crate) fn running(&self, key: Key) -> bool {
        (self.reductions.get(&key)).is_some_and(|r| r.outcome == Outcome::Running)
    }

    /// Hands the executor the original of running reduction `key` to
    /// expose, once: its root, length and data.
    pub(crate) fn take_original(&mut self, key: Key) -> Option<(u32, usize, Original)> {
        let r = self.reductions.get_mut(&key)?;
        if r.outcome != Outcome::Running {
            return None;
        }
        Some((r.root, r.len, r.original.take()?))
    }

    /// This process's data of `key` is exposed at `own` (its replica's
    /// source at `source`).
    pub(crate) fn exposed(&mut self, key: Key, own: u64, source: Option<u64>) {
        if let Some(r) = self.reductions.get_mut(&key) {
            r.own = Some(own);
            r.source = source;
        }
    }

    /// The length of reduction `key` and its own line, when here.
    pub(crate) fn own_line(&self, key: Key) -> Option<(usize, Option<u64>)> {
        (self.reductions.get(&key)).map(|r| (r.len, r.own))
    }

    /// Asks `holder` to keep the replica of this process's data of `key`
    /// (read from its source): the message to send it. With no holder, or
    /// nothing to read it from, there is none (the file here serves).
    pub(crate) fn ask_replica(&mut self, key: Key, holder: Option<u32>) -> Option<(u32, Message)> {
        let r = self.reductions.get_mut(&key)?;
        let (Some(holder), Some(source)) = (holder, r.source) else {
            r.replica = Replica::Nowhere;
            return None;
        };
        r.replica = Replica::Asked(holder);
        let m = Message::Store {
            key,
            disp: source,
            len: r.len as u64,
        };
        Some((holder, m))
    }

    /// Whether the call of reduction `key` still waits for its replica.
    pub(crate) fn replica_waits(&self, key: Key) -> bool {
        (self.reductions.get(&key))
            .is_some_and(|r| r.replica.waits() && r.outcome == Outcome::Running)
    }

    /// The call of reduction `key` returns. When its replica's holder
    /// refused it, the reduction is abandoned here and the holder named
    /// (the call fails).
    pub(crate) fn returned(&mut self, key: Key) -> Option<u32> {
        let r = self.reductions.get_mut(&key)?;
        r.returned = true;
        let refused = match (r.replica, r.outcome) {
            (Replica::Refused(holder), Outcome::Running) => Some(holder),
            _ => None,
        };
        if refused.is_some() {
            self.abandon(key);
        }
        refused
    }

    /// Whether the executor, asked to start `key` only after its call
    /// returned, still waits for that.
    pub(crate) fn awaits_return(&self, key: Key) -> bool {
        !self.closing && (self.reductions.get(&key)).is_some_and(|r| !r.returned)
    }

    /// The ranks the master said failed.
    pub(crate) fn dead(&self) -> &[u32] {
        &self.dead
    }

    /// The master says group rank `rank` failed: the running reductions
    /// whose replica was asked of it, to ask of the next.
    pub(crate) fn failed(&mut self, rank: u32) -> Vec<Key> {
        self.dead.push(rank);
        (self.reductions.iter())
            .filter(|(_, r)| r.replica == Replica::Asked(rank) && r.outcome == Outcome::Running)
            .map(|(k, _)| *k)
            .collect()
    }

    /// The executor takes the working copy of line `disp` of `key` (none
    /// before the line's first task), with how to combine and the length.
    pub(crate) fn take_line(&mut self, key: Key, disp: u64) -> Option<TaskLine> {
        let r = self.reductions.get_mut(&key)?;
        Some(TaskLine {
            copy: r.lines.remove(&disp),
            combine: Arc::clone(&r.combine),
            len: r.len,
        })
    }

    /// The bytes of the working copy of line `disp` of `key`.
    pub(crate) fn line(&self, key: Key, disp: u64) -> Option<&[u8]> {
        let r = self.reductions.get(&key)?;
        r.lines.get(&disp).map(|line| line.bytes())
    }

    /// The working copy of line `disp` of `key` (or the pool, when the
    /// reduction went meanwhile).
    pub(crate) fn put_line(&mut self, key: Key, disp: u64, line: Box<dyn Buffer>) {
        match self.reductions.get_mut(&key) {
            Some(r) => {
                r.lines.insert(disp, line);
            }
            None => self.pool.put_copy(line),
        }
    }

    /// Takes the request of group rank `owner` to keep its replica of
    /// `key`, when queued: a task that read the owner's original keeps
    /// what it read.
    pub(crate) fn take_store(&mut self, owner: u32, key: Key) -> bool {
        let asked = (self.work.iter()).position(|w| {
            matches!(w, Work::Message(f, Message::Store { key: k, .. })
                if *f == owner && *k == key)
        });
        asked.and_then(|i| self.work.remove(i)).is_some()
    }

    /// Reduction `key` ended with `outcome`: its files go (queued with
    /// the outcome, so that a reducer dropped as soon as the future returns
    /// still removes them), its copies to the pool; the root keeps its
    /// result for the future; an abandoned one goes whole; one not started
    /// here begins ended.
    pub(crate) fn end(&mut self, key: Key, outcome: Outcome) {
        self.deferred.remove(&key);
        self.writes.push_back(Write::Remove(key));
        let mut copies = Vec::new();
        match self.reductions.get_mut(&key) {
            Some(r) if r.abandoned => {
                copies.extend(r.lines.drain().map(|(_, c)| c));
                self.reductions.remove(&key);
            }
            Some(r) if r.outcome == Outcome::Running => {
                r.outcome = outcome;
                let keep = match (outcome, r.root == self.me) {
                    (Outcome::Finished(d), true) => Some(d),
                    _ => None,
                };
                let gone: Vec<u64> = (r.lines.keys())
                    .filter(|&&d| Some(d) != keep)
                    .copied()
                    .collect();
                copies.extend(gone.iter().filter_map(|d| r.lines.remove(d)));
            }
            Some(_) => {}
            None => {
                self.early.insert(key, outcome);
            }
        }
        for copy in copies {
            self.pool.put_copy(copy);
        }
    }

    /// Nobody reads reduction `key` here any more: it goes now if it
    /// ended, else at its end.
    pub(crate) fn abandon(&mut self, key: Key) {
        match self.reductions.get_mut(&key) {
            Some(r) if r.outcome == Outcome::Running => r.abandoned = true,
            Some(_) => {
                self.reductions.remove(&key);
            }
            None => {}
        }
    }

    /// The master died: every reduction here fails (once).
    pub(crate) fn master_lost(&mut self) {
        if self.master_dead {
            return;
        }
        self.master_dead = true;
        let failure = Failure::MasterDied(0);
        let keys: Vec<Key> = self.reductions.keys().copied().collect();
        for key in keys {
            (self.work).push_back(Work::Message(0, Message::Failed { key, failure }));
        }
    }

    /// Group rank `rank` is lost (its predecessor's watch, or the
    /// launcher, says so) at `now`: dead on the ring. The master lost:
    /// every reduction fails, and the live workers to tell.
    pub(crate) fn lost(&mut self, rank: u32, now: Instant) -> Vec<u32> {
        self.ring.died(rank, now);
        if rank != 0 {
            return Vec::new();
        }
        self.master_lost();
        (1..self.size)
            .filter(|&r| r != self.me && !self.ring.is_dead(r))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::buffer::RootCopy;

    fn key(id: u64, round: u32) -> Key {
        Key { id, round }
    }

    fn original() -> Original {
        Original::Root(Box::new(RootCopy {
            data: vec![0u64; 4],
            result: Arc::new(Mutex::new(None)),
        }))
    }

    fn combine() -> Combine {
        Arc::new(|into: &mut [u8], from: &[u8]| {
            (into.iter_mut().zip(from)).for_each(|(a, b)| *a = a.wrapping_add(*b))
        })
    }

    /// Rank 1 of 4, reduction `k` to root 0 begun.
    fn worker_with(k: Key) -> Worker {
        let mut w = Worker::new(1, 4, Instant::now());
        w.begin(k, 0, 32, combine(), original()).unwrap();
        w
    }

    fn task(k: Key) -> Message {
        Message::Task {
            key: k,
            number: 1,
            into_disp: 1 << 40,
            from_holder: 2,
            from_disp: 2 << 40,
            from_original: true,
        }
    }

    #[test]
    fn an_id_is_free_again_once_its_reduction_went() {
        let mut w = Worker::new(1, 4, Instant::now());
        let k = w.next_key(7).unwrap();
        assert_eq!(k, key(7, 0));
        w.begin(k, 0, 32, combine(), original()).unwrap();
        assert!(matches!(w.next_key(7), Err(Error::Usage(_))));
        // A second thread that took the same key starts nothing.
        assert!(w.begin(k, 0, 32, combine(), original()).is_err());
        assert_eq!(w.reductions.len(), 1);
        w.end(k, Outcome::Finished(0));
        assert!(w.ended(k));
        w.abandon(k);
        assert_eq!(w.next_key(7).unwrap(), key(7, 1));
        // A skipped round counts as used.
        w.skip(key(7, 1));
        assert_eq!(w.next_key(7).unwrap(), key(7, 2));
        assert!(w.ended(key(7, 1)));
    }

    #[test]
    fn work_that_comes_before_the_start_waits_for_it_in_order() {
        let mut w = Worker::new(1, 4, Instant::now());
        let k = key(3, 0);
        let reload = Message::Reload { key: k, rank: 2 };
        assert!(w.receive(0, task(k), Instant::now()));
        assert!(w.receive(0, reload.clone(), Instant::now()));
        let Next::Do(Work::Message(from, m)) = w.next_work() else {
            panic!("the task is queued")
        };
        assert_eq!(w.defer(from, m), None);
        let Next::Do(Work::Message(from, m)) = w.next_work() else {
            panic!("the reload is queued")
        };
        assert_eq!(w.defer(from, m), None);
        assert_eq!(w.next_work(), Next::Wait);
        // A message that needs no reduction is handled at once.
        assert_eq!(w.defer(0, Message::Ping), Some(Message::Ping));
        w.begin(k, 0, 32, combine(), original()).unwrap();
        assert_eq!(w.next_work(), Next::Do(Work::Start(k)));
        assert_eq!(w.next_work(), Next::Do(Work::Message(0, task(k))));
        assert_eq!(w.next_work(), Next::Do(Work::Message(0, reload.clone())));
        // Started: the next one is handled at once.
        assert_eq!(w.defer(0, reload.clone()), Some(reload));
    }

    #[test]
    fn an_outcome_before_the_start_ends_the_reduction_at_its_start() {
        let mut w = Worker::new(1, 4, Instant::now());
        let k = key(5, 0);
        let failure = Failure::DataLost(2);
        w.end(k, Outcome::Failed(failure));
        assert!(w.ended(k));
        w.begin(k, 0, 32, combine(), original()).unwrap();
        assert_eq!(w.reductions[&k].outcome, Outcome::Failed(failure));
        assert!(
            w.take_original(k).is_none(),
            "an ended reduction starts not"
        );
        assert!(!w.replica_waits(k));
    }

    #[test]
    fn a_replica_is_durable_only_by_the_holder_asked() {
        let k = key(1, 0);
        let mut w = worker_with(k);
        assert!(w.replica_waits(k));
        assert!(w.take_original(k).is_some());
        assert!(w.take_original(k).is_none(), "taken once");
        w.exposed(k, 1 << 40, Some(2 << 40));
        let store = Message::Store {
            key: k,
            disp: 2 << 40,
            len: 32,
        };
        assert_eq!(w.ask_replica(k, Some(3)), Some((3, store)));
        // Another rank's answer changes nothing.
        w.receive(2, Message::Stored { key: k, ok: true }, Instant::now());
        assert!(w.replica_waits(k));
        w.receive(3, Message::Stored { key: k, ok: true }, Instant::now());
        assert!(!w.replica_waits(k));
        assert_eq!(w.returned(k), None);
        assert!(!w.awaits_return(k));
        // Nobody to ask: none is made, nothing waits.
        let k2 = key(2, 0);
        w.begin(k2, 0, 32, combine(), original()).unwrap();
        assert_eq!(w.ask_replica(k2, None), None);
        assert!(!w.replica_waits(k2));
    }

    #[test]
    fn a_refused_replica_fails_the_call_and_abandons_the_reduction() {
        let k = key(1, 0);
        let mut w = worker_with(k);
        w.exposed(k, 1 << 40, Some(2 << 40));
        w.ask_replica(k, Some(3));
        w.receive(3, Message::Stored { key: k, ok: false }, Instant::now());
        assert!(!w.replica_waits(k));
        assert_eq!(w.returned(k), Some(3));
        // Abandoned: it goes at its end.
        w.end(k, Outcome::Failed(Failure::DataLost(1)));
        assert!(!w.reductions.contains_key(&k));
    }

    #[test]
    fn a_replica_asked_of_a_failed_rank_is_asked_again() {
        let k = key(1, 0);
        let mut w = worker_with(k);
        w.exposed(k, 1 << 40, Some(2 << 40));
        w.ask_replica(k, Some(3));
        assert_eq!(w.failed(2), Vec::<Key>::new());
        assert_eq!(w.failed(3), vec![k]);
        assert_eq!(w.dead(), &[2, 3]);
        w.end(k, Outcome::Failed(Failure::DataLost(3)));
        assert_eq!(w.failed(3), Vec::<Key>::new(), "not once it ended");
    }

    #[test]
    fn keeping_a_replica_waits_behind_the_reductions_work() {
        let k = key(1, 0);
        let mut w = worker_with(k);
        assert_eq!(w.next_work(), Next::Do(Work::Start(k)));
        let store = Message::Store {
            key: k,
            disp: 1 << 40,
            len: 32,
        };
        w.receive(2, store.clone(), Instant::now());
        w.receive(0, task(k), Instant::now());
        assert_eq!(w.next_work(), Next::Do(Work::Message(0, task(k))));
        assert_eq!(w.next_work(), Next::Do(Work::Message(2, store.clone())));
        // A task that read the owner's original takes its request.
        w.receive(2, store, Instant::now());
        assert!(!w.take_store(3, k));
        assert!(w.take_store(2, k));
        assert_eq!(w.next_work(), Next::Wait);
        // A ping is no work.
        assert!(!w.receive(2, Message::Ping, Instant::now()));
        assert_eq!(w.next_work(), Next::Wait);
    }

    #[test]
    fn the_master_lost_fails_every_reduction_once() {
        let (k1, k2) = (key(1, 0), key(2, 0));
        let mut w = worker_with(k1);
        w.begin(k2, 0, 32, combine(), original()).unwrap();
        w.ring.died(3, Instant::now());
        // Told by the master's watcher: the other live workers hear it.
        assert_eq!(w.lost(0, Instant::now()), vec![2]);
        w.receive(2, Message::Dead { rank: 0 }, Instant::now());
        let mut failed = Vec::new();
        while let Next::Do(work) = w.next_work() {
            if let Work::Message(0, Message::Failed { key, failure }) = work {
                assert_eq!(failure, Failure::MasterDied(0));
                failed.push(key);
            }
        }
        failed.sort();
        assert_eq!(failed, vec![k1, k2]);
        // One begun after begins failed.
        let k3 = key(3, 0);
        w.begin(k3, 0, 32, combine(), original()).unwrap();
        assert_eq!(
            w.reductions[&k3].outcome,
            Outcome::Failed(Failure::MasterDied(0))
        );
        // Another rank lost tells nobody.
        assert_eq!(w.lost(2, Instant::now()), Vec::<u32>::new());
    }

    #[test]
    fn an_end_keeps_the_roots_result_and_pools_the_rest() {
        let k = key(1, 0);
        let mut w = Worker::new(0, 4, Instant::now());
        w.begin(k, 0, 32, combine(), original()).unwrap();
        let Some((0, 32, Original::Root(copy))) = w.take_original(k) else {
            panic!("the root's copy")
        };
        w.put_line(k, ROOT_LINE, copy);
        w.put_line(k, 3 << 40, Box::new(Aligned::zeroed(32)));
        let taken = w.take_line(k, 3 << 40).unwrap();
        assert_eq!(taken.len, 32);
        w.put_line(k, 3 << 40, taken.copy.unwrap());
        w.end(k, Outcome::Finished(ROOT_LINE));
        let lines: Vec<u64> = w.reductions[&k].lines.keys().copied().collect();
        assert_eq!(lines, vec![ROOT_LINE]);
        assert!(w.pool.copy(32).is_some(), "the other copy is pooled");
        // A second end changes nothing; its files go each time.
        w.end(k, Outcome::Failed(Failure::DataLost(2)));
        assert_eq!(w.reductions[&k].outcome, Outcome::Finished(ROOT_LINE));
        assert!(matches!(w.next_write(), Next::Do(Write::Remove(r)) if r == k));
        assert!(matches!(w.next_write(), Next::Do(Write::Remove(r)) if r == k));
        assert!(matches!(w.next_write(), Next::Wait));
    }

    #[test]
    fn closing_ends_the_threads_and_keeps_only_removals() {
        let k = key(1, 0);
        let mut w = worker_with(k);
        let copy = Aligned::zeroed(8);
        w.write(Write::Keep {
            key: k,
            owner: 2,
            copy,
        });
        w.write(Write::Remove(k));
        assert!(w.awaits_return(k));
        w.close();
        assert!(w.needless(k));
        assert!(!w.awaits_return(k));
        assert_eq!(w.next_work(), Next::Close);
        assert!(matches!(w.next_write(), Next::Do(Write::Remove(r)) if r == k));
        assert!(matches!(w.next_write(), Next::Close));
    }
}
