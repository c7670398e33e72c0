//! The executor: a [`Schedule`] run over the endpoint's tagged messages,
//! round by round. A blocking collective runs it over the caller's
//! borrowed buffers; a nonblocking one ([`Run`]) over buffers handed to
//! it (owned, and handed back at completion by [`Run::into_buffers`]), so
//! that it can be advanced by any call into its [`Comm`](crate::Comm):
//! every test or wait of any of its requests, every new collective and the
//! wait of every blocking one advance all the Comm's runs in flight, in
//! the order they were started. Ranks may therefore wait on
//! their requests in any order, and work between tests without holding
//! their peers back for longer than that work.
//!
//! A receive that brings fewer bytes than the schedule expects (counts
//! that do not match) does not end the run: it goes on to its last round,
//! so that its peers are not left waiting for its messages, sending from
//! its input as usual but nothing (empty messages) from its output or
//! scratch, which may hold what it should have received; then it fails
//! naming the sender. Its peers that expected something from those
//! messages fail alike, and the others complete. A message larger than a
//! receive expects is the provider's truncation: libfabric 1.17's `shm`
//! does not report it above its inject size, and `tcp` reports it but
//! may drop the connection, so such calls end with the endpoint's timeout
//! (or an error on the connection) instead. So does a block one side
//! counts as empty and the other does not: an empty block sends no
//! message ([`Schedule::push_data`]), and the receive waiting for one
//! times out.
//!
//! Each round's copies happen first, then its sends and receives are
//! posted together (sends from copies: the round's slices as they are at
//! that moment), and when all have completed its receives (and
//! combinations) are applied in the listed order. Messages of a round carry
//! the tag [`tag`]`(call, round)`, where the call number mixes the Comm's
//! context (its group, its number among the process's Comms, its profile)
//! with the call's number: rounds never mix, and calls only when two
//! in flight at once collide in 21 bits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use onesided_fabric::spin::SpinLock;
use onesided_fabric::{Endpoint, Incoming, Transfer};
use onesided_rma::{Group, Request};

use crate::op::Combine;
use crate::schedule::{Action, Buf, Schedule, Slice};
use crate::scratch::{self, Scratch, Spare};
use crate::shared;
use crate::Error;

/// Tags of collective messages: the top half of the user tag space is
/// onesided's ([`onesided_fabric::MAX_TAG`] is 2^39 - 1); a call's number
/// (mixed with its group, 22 bits) and the round (16 bits) fill it.
pub fn tag(call: u64, round: usize) -> u64 {
    const COLLECTIVE: u64 = 1 << 38;
    COLLECTIVE | ((call & ((1 << 22) - 1)) << 16) | (round as u64 & 0xffff)
}

/// Rounds a schedule may have (the tag's round field).
pub const MAX_ROUNDS: usize = 1 << 16;

/// Checks that `schedule` fits buffers of `input` and `output` elements
/// (and its scratch) and the tag's round field.
///
/// # Errors
/// [`Error::BadCall`] naming the step that does not fit.
pub(crate) fn check(schedule: &Schedule, input: usize, output: usize) -> Result<(), Error> {
    if schedule.rounds.len() > MAX_ROUNDS {
        return Err(Error::BadCall(format!("{} rounds", schedule.rounds.len())));
    }
    let lens = [input, output, schedule.scratch];
    let fits = |s: &Slice| {
        let len = match s.buf {
            Buf::Input => lens[0],
            Buf::Output => lens[1],
            Buf::Scratch => lens[2],
        };
        s.at.checked_add(s.len).is_some_and(|end| end <= len)
    };
    for a in schedule.rounds.iter().flatten() {
        let ok = match a {
            Action::Copy { from, to } | Action::Reduce { from, into: to } => {
                fits(from) && fits(to) && from.len == to.len && to.buf != Buf::Input
            }
            Action::Send { data, .. } => fits(data),
            Action::Recv { into, .. } | Action::RecvReduce { into, .. } => {
                fits(into) && into.buf != Buf::Input
            }
        };
        if !ok {
            return Err(Error::BadCall(format!(
                "a step {a:?} does not fit buffers of {} / {} / {} elements",
                lens[0], lens[1], lens[2]
            )));
        }
    }
    Ok(())
}

/// Receives of this many bytes or more (64 KiB) in a blocking call land
/// straight in its buffers: copying them out of an endpoint-owned buffer
/// costs a memcpy about as long as the transfer across hosts (figures:
/// docs/measurements.md, "Direct receives (across hosts)"). Sends keep
/// copying into pooled buffers: a send from caller memory could not give
/// up on a peer that never receives (a program's bug) without leaving the
/// provider reading memory the caller has back, so it would wait forever.
/// Not on libfabric < 1.19's `shm` ([`onesided_fabric::Granted::queues_large_unexpected`]),
/// which leaves a truncated large receive incomplete forever (128 KiB
/// sent to a 64 KiB receive): one into caller memory could not give up.
const DIRECT_FROM: usize = 64 * 1024;

/// `buf` cut at the byte ranges `(at, len)` of `receives` (disjoint and in
/// bounds: see [`Exec::direct_receives`] and [`check`]): their slices, in
/// the order of `receives`.
fn carve<'b>(buf: &'b mut [u8], receives: &[(usize, usize)]) -> std::vec::IntoIter<&'b mut [u8]> {
    let mut order: Vec<usize> = (0..receives.len()).collect();
    order.sort_unstable_by_key(|&i| receives[i].0);
    let mut pieces: Vec<Option<&'b mut [u8]>> = (0..receives.len()).map(|_| None).collect();
    let (mut rest, mut at) = (buf, 0);
    for i in order {
        let (start, len) = receives[i];
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - at);
        let (piece, tail) = tail.split_at_mut(len);
        pieces[i] = Some(piece);
        (rest, at) = (tail, start + len);
    }
    pieces.into_iter().flatten().collect::<Vec<_>>().into_iter()
}

/// Disjoint slices `from` (to read) and `to` (to write) of one buffer;
/// `None` when they overlap.
fn split<T>(buf: &mut [T], from: Slice, to: Slice) -> Option<(&[T], &mut [T])> {
    if from.at + from.len <= to.at {
        let (low, high) = buf.split_at_mut(to.at);
        Some((&low[from.at..from.at + from.len], &mut high[..to.len]))
    } else if to.at + to.len <= from.at {
        let (low, high) = buf.split_at_mut(from.at);
        Some((&high[..from.len], &mut low[to.at..to.at + to.len]))
    } else {
        None
    }
}

/// A schedule being executed over input `I` and output `O`.
///
/// It holds neither the endpoint nor the group: its Comm's list lends
/// them at each test (a handle cloned per call costs two atomic
/// instructions, which show in small calls).
pub(crate) struct Exec<T: bytemuck::Pod + Send, I, O> {
    schedule: Schedule,
    call: u64,
    input: I,
    output: O,
    scratch: Scratch,
    combine: Option<Combine<T>>,
    round: usize,
    /// The round's transfers, with the index of their action.
    pending: Vec<(usize, Transfer)>,
    posted: bool,
    done: bool,
    /// The error that ended it: a failed run fails again when tested
    /// (its buffers may hold anything).
    failed: Option<String>,
    /// That error itself, until its request takes it ([`Exec::error`]).
    error: Option<Error>,
    /// What the first receive whose length was not the one expected
    /// (counts that do not match) got wrong: the run goes on to its end,
    /// so that its peers are not left waiting, sending nothing from its
    /// output or scratch (what it would forward may be wrong), and then
    /// fails with it ([`Error::BadCall`]).
    mismatch: Option<String>,
    /// A shared-memory run instead of the schedule (which is empty then).
    shared: Option<shared::Run<'static>>,
    /// Held back from posting its first round (see [`Inflight`]).
    held: bool,
    /// A blocking call with nothing else in flight: its large receives
    /// land straight in its buffers ([`Exec::direct_receives`]).
    direct: bool,
    /// This round's receives already in place.
    received: Vec<usize>,
}

/// What an [`Exec`] runs: a schedule over messages, or a shared-memory
/// run.
pub(crate) enum Work {
    /// A schedule over tagged messages.
    Schedule(Schedule),
    /// Steps through shared memory.
    Shared(shared::Run<'static>),
}

impl<T: bytemuck::Pod + Send, I: AsRef<[T]>, O: AsRef<[T]> + AsMut<[T]>> Exec<T, I, O> {
    /// Runs rounds as far as their messages allow, over `ep` among
    /// `group`; whether all are done.
    fn advance(&mut self, ep: &Endpoint, group: &Group) -> Result<bool, Error> {
        if let Exec {
            shared: Some(run),
            input,
            output,
            scratch,
            combine,
            ..
        } = self
        {
            let scratch = scratch.elements_mut();
            return run.advance(input.as_ref(), output.as_mut(), scratch, combine.as_ref());
        }
        while !self.done {
            if self.round >= self.schedule.rounds.len() {
                self.done = true;
                if let Some(text) = &self.mismatch {
                    return Err(Error::BadCall(text.clone()));
                }
                break;
            }
            if !self.posted {
                if self.held && self.round == 0 {
                    return Ok(false);
                }
                self.post(ep, group)?;
            }
            for k in 0..self.pending.len() {
                let (i, t) = &mut self.pending[k];
                match t.test_alive() {
                    Ok(true) => {}
                    Ok(false) => return Ok(false),
                    // Counts that do not match, as a message too short.
                    Err(onesided_fabric::Error::Truncated { .. }) => {
                        if let Action::Recv { from, into } | Action::RecvReduce { from, into, .. } =
                            self.schedule.rounds[self.round][*i]
                        {
                            self.note_longer(from, into.len * size_of::<T>());
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            self.finish_round()?;
            self.round += 1;
            self.posted = false;
        }
        Ok(true)
    }

    /// Prepares `schedule` (this rank's, in `group`) for call number
    /// `call`; nothing moves before the first `test`.
    ///
    /// # Errors
    /// [`Error::BadCall`] when the schedule has too many rounds or a slice
    /// lies outside its buffer (nothing is posted).
    pub(crate) fn new(
        work: Work,
        call: u64,
        (input, mut output): (I, O),
        combine: Option<Combine<T>>,
        spare: &Spare,
    ) -> Result<Exec<T, I, O>, Error> {
        let (schedule, shared) = match work {
            Work::Schedule(schedule) => {
                check(&schedule, input.as_ref().len(), output.as_mut().len())?;
                (schedule, None)
            }
            Work::Shared(run) => (Schedule::default(), Some(run)),
        };
        let scratch = match &shared {
            Some(run) => run.scratch::<T>(input.as_ref().len()),
            None => schedule.scratch,
        };
        Ok(Exec {
            shared,
            scratch: spare.zeroed::<T>(scratch)?,
            schedule,
            call,
            input,
            output,
            combine,
            round: 0,
            pending: Vec::new(),
            posted: false,
            done: false,
            failed: None,
            error: None,
            mismatch: None,
            held: false,
            direct: false,
            received: Vec::new(),
        })
    }

    fn slice(&self, s: Slice) -> &[T] {
        let buf: &[T] = match s.buf {
            Buf::Input => self.input.as_ref(),
            Buf::Output => self.output.as_ref(),
            Buf::Scratch => self.scratch.elements(),
        };
        &buf[s.at..s.at + s.len]
    }

    fn slice_mut(&mut self, s: Slice) -> &mut [T] {
        let buf: &mut [T] = match s.buf {
            // Checked in `new`: receives and copies never target the input.
            Buf::Input | Buf::Output => self.output.as_mut(),
            Buf::Scratch => self.scratch.elements_mut(),
        };
        &mut buf[s.at..s.at + s.len]
    }

    /// Slice `from` to read and slice `to` to write at once (split
    /// borrows, no copy between them); `None` when both lie in one buffer
    /// and overlap.
    fn pair(&mut self, from: Slice, to: Slice) -> Option<(&[T], &mut [T])> {
        let Exec {
            input,
            output,
            scratch,
            ..
        } = self;
        let scratch = scratch.elements_mut::<T>();
        let (src, dest): (&[T], &mut [T]) = match (from.buf, to.buf) {
            (Buf::Input, Buf::Scratch) => (I::as_ref(input), scratch),
            (Buf::Input, _) => (I::as_ref(input), O::as_mut(output)),
            (Buf::Output, Buf::Scratch) => (O::as_ref(output), scratch),
            (Buf::Scratch, Buf::Input | Buf::Output) => (scratch, O::as_mut(output)),
            // One buffer (`to` is never the input: checked in `new`).
            (Buf::Output, _) => return split(O::as_mut(output), from, to),
            (Buf::Scratch, Buf::Scratch) => return split(scratch, from, to),
        };
        Some((
            &src[from.at..from.at + from.len],
            &mut dest[to.at..to.at + to.len],
        ))
    }

    /// The round's copies (`actions`), first in the round.
    fn copy(&mut self, actions: &[Action]) {
        for a in actions {
            if let Action::Copy { from, to } = a {
                match self.pair(*from, *to) {
                    Some((src, dest)) => dest.copy_from_slice(src),
                    None => {
                        let data = self.slice(*from).to_vec();
                        self.slice_mut(*to).copy_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The receives of `actions` (by index) that land straight in the
    /// buffers ([`Exec::receive_in_place`]): in a blocking call with
    /// nothing else in flight, plain receives of [`DIRECT_FROM`] bytes or
    /// more from a peer with no other receive in the round, whose slices
    /// overlap no other receive's. What a member receives so is its own
    /// business: its peers send as always.
    fn direct_receives(&self, ep: &Endpoint, actions: &[Action]) -> Vec<usize> {
        if !self.direct || self.mismatch.is_some() || !ep.granted().queues_large_unexpected() {
            return Vec::new();
        }
        let targets: Vec<(usize, u32, Slice)> = (actions.iter().enumerate())
            .filter_map(|(i, a)| match a {
                Action::Recv { from, into } | Action::RecvReduce { from, into, .. } => {
                    Some((i, *from, *into))
                }
                _ => None,
            })
            .collect();
        let apart =
            |a: &Slice, b: &Slice| a.buf != b.buf || a.at + a.len <= b.at || b.at + b.len <= a.at;
        // A peer's messages of one round match its receives in the order
        // posted: one with several receives keeps them all on one path.
        (targets.iter())
            .filter(|(i, from, into)| {
                matches!(actions[*i], Action::Recv { .. })
                    && into.len * size_of::<T>() >= DIRECT_FROM
                    && (targets.iter())
                        .all(|(j, other, slice)| j == i || (other != from && apart(into, slice)))
            })
            .map(|(i, ..)| *i)
            .collect()
    }

    /// Receives the `direct` receives of `actions` straight into their
    /// slices ([`Endpoint::recv_many`], blocking: the round's sends and
    /// other receives are posted before); notes a length that differs.
    ///
    /// # Errors
    /// The receives' (but a truncated one: counts that do not match).
    fn receive_in_place(
        &mut self,
        (ep, group): (&Endpoint, &Group),
        actions: &[Action],
        direct: &[usize],
        tag: u64,
    ) -> Result<(), Error> {
        let size = size_of::<T>();
        let ranges = |buf: Buf| -> Vec<(usize, usize)> {
            (direct.iter())
                .filter_map(|&i| match actions[i] {
                    Action::Recv { into, .. } if into.buf == buf => {
                        Some((into.at * size, into.len * size))
                    }
                    _ => None,
                })
                .collect()
        };
        let (out, scr) = (ranges(Buf::Output), ranges(Buf::Scratch));
        let Exec {
            output, scratch, ..
        } = self;
        let mut out_into = carve(bytemuck::cast_slice_mut(O::as_mut(output)), &out);
        let scratch = scratch.elements_mut::<T>();
        let mut scr_into = carve(bytemuck::cast_slice_mut(scratch), &scr);
        let mut recvs = Vec::with_capacity(direct.len());
        let mut expected = Vec::with_capacity(direct.len());
        for &i in direct {
            if let Action::Recv { from, into } = actions[i] {
                let buf = match into.buf {
                    Buf::Scratch => scr_into.next(),
                    _ => out_into.next(),
                }
                .ok_or_else(|| Error::BadCall("a receive without its slice".into()))?;
                expected.push((from, buf.len()));
                let rank = group.job_rank(from)?;
                recvs.push(Incoming {
                    from: rank,
                    tag,
                    buf,
                });
            }
        }
        let got = ep.recv_many(&mut recvs);
        drop(recvs);
        match got {
            Ok(got) => {
                for ((from, len), got) in expected.into_iter().zip(got) {
                    self.note_length(from, got, len);
                }
            }
            Err(onesided_fabric::Error::Truncated { rank, capacity, .. }) => {
                let from = group.group_rank(rank).unwrap_or(rank);
                self.note_longer(from, capacity);
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    /// Copies, then posts the round's messages.
    fn post(&mut self, ep: &Endpoint, group: &Group) -> Result<(), Error> {
        let actions = self.schedule.rounds[self.round].clone();
        self.copy(&actions);
        let tag = tag(self.call, self.round);
        let direct = self.direct_receives(ep, &actions);
        // Receives first: a message that arrives before its receive is
        // posted is buffered by the provider and copied once more.
        let receives_first = (actions.iter().enumerate())
            .filter(|(_, a)| !matches!(a, Action::Send { .. }))
            .chain((actions.iter().enumerate()).filter(|(_, a)| matches!(a, Action::Send { .. })))
            .filter(|(i, _)| !direct.contains(i));
        for (i, a) in receives_first {
            let transfer = match a {
                Action::Send { to, data } => {
                    let bytes: &[u8] = match (&self.mismatch, data.buf) {
                        (Some(_), Buf::Output | Buf::Scratch) => &[],
                        _ => bytemuck::cast_slice(self.slice(*data)),
                    };
                    ep.send_start(group.job_rank(*to)?, tag, bytes)?
                }
                Action::Recv { from, into } | Action::RecvReduce { from, into, .. } => {
                    let len = std::mem::size_of_val(self.slice(*into));
                    ep.recv_start(group.job_rank(*from)?, tag, len)?
                }
                _ => continue,
            };
            self.pending.push((i, transfer));
        }
        // `finish_round` takes the transfers in action order.
        self.pending.sort_unstable_by_key(|(i, _)| *i);
        self.posted = true;
        if !direct.is_empty() {
            self.receive_in_place((ep, group), &actions, &direct, tag)?;
        }
        self.received = direct;
        Ok(())
    }

    /// The operation, and the slice `into` it combines into (split
    /// borrows of the run).
    fn combining(&mut self, into: Slice) -> Result<(&Combine<T>, &mut [T]), Error> {
        let Exec {
            combine,
            output,
            scratch,
            ..
        } = self;
        let combine = combine
            .as_ref()
            .ok_or_else(|| Error::BadCall("a reduction without an operation".into()))?;
        let buf: &mut [T] = match into.buf {
            Buf::Scratch => scratch.elements_mut(),
            // Checked in `new`: nothing writes the input.
            Buf::Input | Buf::Output => output.as_mut(),
        };
        Ok((combine, &mut buf[into.at..into.at + into.len]))
    }

    /// The bytes a completed receive from group rank `from` brought, if
    /// exactly `len`; else none, and the run notes the first such
    /// mismatch.
    fn message<'t>(&mut self, t: &'t Transfer, from: u32, len: usize) -> Option<&'t [u8]> {
        let bytes = t.data();
        self.note_length(from, bytes.len(), len).then_some(bytes)
    }

    /// Notes that group rank `from` sent more than the `len` bytes
    /// expected (its receive was truncated), unless a mismatch is noted.
    fn note_longer(&mut self, from: u32, len: usize) {
        self.mismatch.get_or_insert_with(|| {
            format!(
                "group rank {from} sent more than the {len} bytes this member expects: every \
                 member must pass matching counts (a member that received a message of another \
                 length forwards nothing)"
            )
        });
    }

    /// Whether a message from group rank `from` of `got` bytes has the
    /// `len` expected; else the run notes the first such mismatch.
    fn note_length(&mut self, from: u32, got: usize, len: usize) -> bool {
        if got == len {
            return true;
        }
        self.mismatch.get_or_insert_with(|| {
            format!(
                "group rank {from} sent {got} bytes where this member expects {len}: every \
                 member must pass matching counts (a member that received a message of another \
                 length forwards nothing)"
            )
        });
        false
    }

    /// Applies the completed round's receives and combinations in order.
    fn finish_round(&mut self) -> Result<(), Error> {
        let actions = self.schedule.rounds[self.round].clone();
        let mut arrived = std::mem::take(&mut self.pending).into_iter().peekable();
        for (i, a) in actions.iter().enumerate() {
            if self.received.contains(&i) {
                // Already in place.
                continue;
            }
            let mut data = None;
            while let Some((j, _)) = arrived.peek() {
                if *j > i {
                    break;
                }
                let (j, t) = arrived
                    .next()
                    .ok_or_else(|| Error::BadCall("lost a transfer".into()))?;
                if j == i {
                    data = Some(t);
                }
            }
            match a {
                Action::Recv { from, into } => {
                    let t = data
                        .ok_or_else(|| Error::BadCall("a receive without its transfer".into()))?;
                    let Some(bytes) = self.message(&t, *from, into.len * size_of::<T>()) else {
                        continue;
                    };
                    bytemuck::cast_slice_mut::<T, u8>(self.slice_mut(*into)).copy_from_slice(bytes);
                }
                Action::RecvReduce {
                    from,
                    into,
                    received_first,
                } => {
                    let t = data
                        .ok_or_else(|| Error::BadCall("a receive without its transfer".into()))?;
                    let Some(bytes) = self.message(&t, *from, into.len * size_of::<T>()) else {
                        continue;
                    };
                    let (combine, dest) = self.combining(*into)?;
                    match bytemuck::try_cast_slice::<u8, T>(bytes) {
                        // In place: one pass over the data.
                        Ok(got) => combine.call(dest, got, *received_first),
                        Err(_) => {
                            let mut got = vec![T::zeroed(); into.len];
                            bytemuck::cast_slice_mut::<T, u8>(&mut got).copy_from_slice(bytes);
                            combine.call(dest, &got, *received_first);
                        }
                    }
                }
                Action::Reduce { from, into } => {
                    let combine = (self.combine.take())
                        .ok_or_else(|| Error::BadCall("a reduction without an operation".into()))?;
                    match self.pair(*from, *into) {
                        Some((right, dest)) => combine.call(dest, right, false),
                        None => {
                            let right = self.slice(*from).to_vec();
                            combine.call(self.slice_mut(*into), &right, false);
                        }
                    }
                    self.combine = Some(combine);
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl<T, I, O> Exec<T, I, O>
where
    T: bytemuck::Pod + Send,
    I: AsRef<[T]>,
    O: AsRef<[T]> + AsMut<[T]>,
{
    /// Where it is: changes whenever it moves on (a wait that sees it
    /// move starts its backoff over: a long call is many short waits).
    fn mark(&self) -> u64 {
        match &self.shared {
            Some(run) => run.mark(),
            None => self.round as u64,
        }
    }

    /// The rank (in the job) it was last found waiting for.
    pub(crate) fn waiting_for(&self, group: &Group) -> Option<u32> {
        match &self.shared {
            Some(run) => run.waiting_for().and_then(|p| group.job_rank(p).ok()),
            None => self
                .pending
                .iter()
                .find(|(_, t)| !t.is_done())
                .map(|(_, t)| t.rank()),
        }
    }

    /// Whether it is a schedule over messages that has not finished (nor
    /// failed).
    fn exchanging(&self) -> bool {
        self.shared.is_none() && !self.done && self.failed.is_none()
    }

    /// Holds it back from posting its first round (or lets it go).
    fn hold(&mut self, held: bool) {
        self.held = held;
    }

    /// Advances it over `ep` among `group`: how far it got (a failed run
    /// fails again). A byte, not a `Result`: the list tests every run at
    /// every poll, and an error is large to return.
    fn progress(&mut self, ep: &Endpoint, group: &Group) -> Progress {
        if self.failed.is_some() {
            return Progress::Failed;
        }
        match self.advance(ep, group) {
            Ok(true) => Progress::Done,
            Ok(false) => Progress::Pending,
            Err(e) => {
                self.failed = Some(e.to_string());
                self.error = Some(e);
                Progress::Failed
            }
        }
    }

    /// Why it failed: the error itself the first time (whichever test
    /// met it), then its text.
    fn error(&mut self) -> Error {
        let text = || self.failed.clone().unwrap_or_default();
        (self.error.take()).unwrap_or_else(|| Error::Failed(text()))
    }

    /// Advances it over `ep` among `group`; whether it is done.
    ///
    /// # Errors
    /// What failed it (a failed run fails again).
    pub(crate) fn test(&mut self, ep: &Endpoint, group: &Group) -> Result<bool, Error> {
        match self.progress(ep, group) {
            Progress::Pending => Ok(false),
            Progress::Done => Ok(true),
            Progress::Failed => Err(self.error()),
        }
    }
}

/// How far a test got a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    Pending,
    Done,
    Failed,
}

/// A run the [`Inflight`] list can advance.
pub(crate) trait Advance: Send {
    /// As [`Exec::progress`].
    fn progress(&mut self, ep: &Endpoint, group: &Group) -> Progress;
    /// As [`Exec::error`].
    fn error(&mut self) -> Error;
    /// As [`Exec::exchanging`].
    fn exchanging(&self) -> bool;
    /// As [`Exec::hold`].
    fn hold(&mut self, held: bool);
    /// As [`Exec::mark`].
    fn mark(&self) -> u64;
    /// Hands a completed run's buffers to its request ([`Listed::buffers`])
    /// and its scratch to `inflight`'s spares.
    fn hand_over(self: Box<Self>, inflight: &Inflight);
    /// Ends a run its request dropped (`done`: after it completed).
    fn abandon(self: Box<Self>, done: bool, inflight: &Inflight);
}

/// A nonblocking call's executor in a Comm's list, and where its
/// request finds its buffers when it completes: typed on both sides, so
/// nothing is taken back by type.
pub(crate) struct Listed<T: bytemuck::Pod + Send> {
    exec: Exec<T, Vec<T>, Vec<T>>,
    /// Shared with the call's [`Run`].
    buffers: Arc<SpinLock<Option<Buffers<T>>>>,
}

impl<T: bytemuck::Pod + Send> Advance for Listed<T> {
    fn progress(&mut self, ep: &Endpoint, group: &Group) -> Progress {
        self.exec.progress(ep, group)
    }

    fn error(&mut self) -> Error {
        self.exec.error()
    }

    fn exchanging(&self) -> bool {
        self.exec.exchanging()
    }

    fn hold(&mut self, held: bool) {
        self.exec.hold(held);
    }

    fn mark(&self) -> u64 {
        self.exec.mark()
    }

    fn hand_over(self: Box<Self>, inflight: &Inflight) {
        let Listed { exec, buffers } = *self;
        let Exec {
            input,
            output,
            scratch,
            ..
        } = exec;
        inflight.give_back(scratch);
        *buffers.lock() = Some(Buffers { input, output });
    }

    /// A run dropped while peers may still copy its lent buffers out of
    /// this process leaves them allocated (never reused), so that those
    /// copies read its data, not whatever would reuse the memory.
    fn abandon(self: Box<Self>, done: bool, inflight: &Inflight) {
        let mut exec = self.exec;
        if done {
            inflight.give_back(std::mem::take(&mut exec.scratch));
        } else if exec.shared.as_ref().is_some_and(shared::Run::lends) {
            std::mem::forget(std::mem::take(&mut exec.input));
            std::mem::forget(std::mem::take(&mut exec.output));
        }
    }
}

/// The runs of a Comm in flight, oldest first, and the next one's number.
#[derive(Default)]
struct List {
    runs: Vec<Entry>,
    next: u64,
}

/// What testing a run found: how far it got (why it failed), where it
/// is, and the run itself when it was done and asked for.
struct Tested {
    progress: Progress,
    failure: Option<Box<Error>>,
    mark: u64,
    taken: Option<Box<dyn Advance>>,
}

/// A run in a Comm's list: its number, the run, and whether it has
/// finished (completed or failed: its request takes the outcome).
struct Entry {
    id: u64,
    run: Box<dyn Advance>,
    finished: bool,
}

/// A Comm's nonblocking runs in flight, oldest first.
///
/// Where the endpoint cannot queue several large unexpected messages
/// ([`onesided_fabric::Granted::queues_large_unexpected`]: libfabric < 1.19's `shm`, which
/// hangs then), the runs over messages go one after the other: a run
/// posts its first round only once every older one (and, for a blocking
/// call, every one in flight) has finished. A schedule sends one message
/// per peer and round and moves to its next round only once the round's
/// sends completed (were received), so a member then holds at most one
/// unexpected message per peer. Shared-memory runs send no messages and
/// are not held. Runs of different Comms are not ordered so: on that
/// provider, a program that overlaps nonblocking collectives of two Comms
/// over large messages can still meet the provider's hang.
///
/// The list owns its runs; a request names its run by number. The list
/// is shared by the Comm and its requests, so that a request is a handle
/// of its own (kept in a struct, moved to another thread) rather than a
/// borrow of the Comm; a lock guards it, and the runs are advanced
/// under it. A blocking call with no run listed reads one atomic count,
/// not the lock.
pub(crate) struct Inflight {
    /// The runs: a spin lock (its release a plain store, not a wait for
    /// the stores of the runs it advanced: see
    /// [`onesided_fabric::spin`]).
    list: SpinLock<List>,
    /// Runs in the list (finished ones until their requests go), stored
    /// under the list's lock.
    listed: AtomicUsize,
    /// The endpoint (lent to the runs; timeouts and waits of the
    /// requests).
    ep: Endpoint,
    /// The Comm's group (lent to the runs).
    group: Group,
    /// Whether runs over messages go one after the other.
    serial: bool,
    /// Scratch of finished nonblocking runs, for the Comm's [`Spare`]
    /// (without it every nonblocking reduction zeroed fresh memory, which
    /// slowed it; figures: docs/measurements.md, "Scratch of nonblocking
    /// runs"), and how many (stored under the lock, read without it).
    returned: SpinLock<Vec<Scratch>>,
    returned_count: AtomicUsize,
}

impl Inflight {
    /// An empty list for a Comm of `group` over `ep`.
    pub(crate) fn new(ep: &Endpoint, group: &Group) -> Inflight {
        Inflight {
            list: SpinLock::new(List::default()),
            listed: AtomicUsize::new(0),
            ep: ep.clone(),
            group: group.clone(),
            serial: !ep.granted().queues_large_unexpected(),
            returned: SpinLock::new(Vec::new()),
            returned_count: AtomicUsize::new(0),
        }
    }

    /// Keeps a finished nonblocking run's scratch for the Comm's next
    /// calls ([`Inflight::reclaim`]), when worth it
    /// ([`scratch::worth_returning`]).
    fn give_back(&self, scratch: Scratch) {
        if !scratch::worth_returning(&scratch) {
            return;
        }
        let mut returned = self.returned.lock();
        if returned.len() < Spare::KEEP {
            returned.push(scratch);
            self.returned_count.store(returned.len(), Ordering::Relaxed);
        }
    }

    /// Hands the scratch nonblocking runs finished with (maybe on other
    /// threads) to `spare`.
    pub(crate) fn reclaim(&self, spare: &Spare) {
        if self.returned_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut returned = self.returned.lock();
        spare.reclaim(returned.drain(..));
        self.returned_count.store(0, Ordering::Relaxed);
    }

    /// Advances every run in flight once, oldest first, up to its end (a
    /// finished one keeps its outcome for its request).
    pub(crate) fn progress(&self) {
        self.advance(&mut self.list.lock(), u64::MAX, false);
    }

    /// Advances every run in flight once, oldest first, and tests run
    /// `id` (finished or not), taking it out of the list if it is done
    /// and `take` asks for it (`None` when it is gone). The caller
    /// locks the list once for all this (measurements:
    /// `docs/measurements.md`, "Locked instructions after shared
    /// stores").
    fn advance(&self, list: &mut List, id: u64, take: bool) -> Option<Tested> {
        let mut tested = None;
        // Whether an older run still exchanges messages.
        let mut older = false;
        for (at, entry) in list.runs.iter_mut().enumerate() {
            if entry.finished && entry.id != id {
                continue;
            }
            let run = &mut entry.run;
            run.hold(self.serial && older);
            let progress = run.progress(&self.ep, &self.group);
            entry.finished = progress != Progress::Pending;
            older |= run.exchanging();
            if entry.id == id {
                let failure = (progress == Progress::Failed).then(|| Box::new(run.error()));
                let (mark, taken) = (run.mark(), None);
                tested = Some((
                    at,
                    Tested {
                        progress,
                        failure,
                        mark,
                        taken,
                    },
                ));
            }
        }
        let (at, mut tested) = tested?;
        if take && tested.progress == Progress::Done {
            tested.taken = Some(list.runs.remove(at).run);
            self.listed.store(list.runs.len(), Ordering::Relaxed);
        }
        Some(tested)
    }

    /// Starts `exec` as a nonblocking run: listed, then advanced with the
    /// others (which posts its first round).
    pub(crate) fn start<T: bytemuck::Pod + Send>(
        self: &Arc<Self>,
        exec: Exec<T, Vec<T>, Vec<T>>,
    ) -> Run<T> {
        let buffers = Arc::new(SpinLock::new(None));
        let mut list = self.list.lock();
        let id = list.next;
        list.next += 1;
        list.runs.push(Entry {
            id,
            run: Box::new(Listed {
                exec,
                buffers: Arc::clone(&buffers),
            }),
            finished: false,
        });
        self.listed.store(list.runs.len(), Ordering::Relaxed);
        self.advance(&mut list, u64::MAX, false);
        Run {
            inflight: Arc::clone(self),
            claim: Claim {
                id,
                done: false,
                run: Held::Listed,
            },
            buffers,
        }
    }

    /// Whether no run is in flight (a blocking call then has nothing to
    /// advance but itself): a blocking call right after a nonblocking one
    /// that completed is one as any other.
    pub(crate) fn idle(&self) -> bool {
        if self.listed.load(Ordering::Relaxed) == 0 {
            return true;
        }
        let mut list = self.list.lock();
        if !list.runs.iter().all(|e| e.finished) {
            self.advance(&mut list, u64::MAX, false);
        }
        list.runs.iter().all(|e| e.finished)
    }

    /// Whether a run in flight still exchanges messages.
    fn exchanging(&self) -> bool {
        let list = self.list.lock();
        let mut unfinished = list.runs.iter().filter(|e| !e.finished);
        unfinished.any(|e| e.run.exchanging())
    }

    /// A request's test of its run (unless it is done), advancing the
    /// others: whether it is done, and where it is; done, it is taken
    /// out of the list if `take` asks for it.
    fn step(&self, claim: &mut Claim, take: bool) -> Result<(bool, u64), Error> {
        if claim.done {
            return Ok((true, 0));
        }
        let tested = (self.advance(&mut self.list.lock(), claim.id, take))
            .ok_or_else(|| Error::Failed("the call's run is gone".into()))?;
        if let Some(e) = tested.failure {
            return Err(*e);
        }
        if let Some(run) = tested.taken {
            claim.run = Held::Taken(run);
        }
        claim.done = tested.progress == Progress::Done;
        Ok((claim.done, tested.mark))
    }

    /// Takes run `id` out of the list (for good).
    fn remove(&self, id: u64) -> Option<Box<dyn Advance>> {
        let mut list = self.list.lock();
        let at = list.runs.iter().position(|e| e.id == id)?;
        let run = list.runs.remove(at).run;
        self.listed.store(list.runs.len(), Ordering::Relaxed);
        Some(run)
    }

    /// Runs a blocking call's shared-memory `run` over the caller's
    /// buffers when no run is in flight: no executor, nothing else to
    /// advance.
    pub(crate) fn wait_shared<T: bytemuck::Pod + Send>(
        &self,
        mut run: shared::Run<'_>,
        (input, output): (&[T], &mut [T]),
        combine: Option<&Combine<T>>,
        spare: &Spare,
    ) -> Result<(), Error> {
        let mut scratch = spare.zeroed::<T>(run.scratch::<T>(input.len()))?;
        let late = drive(&self.ep, || {
            let done = run.advance(input, output, scratch.elements_mut(), combine)?;
            Ok::<_, Error>((done, run.mark()))
        })?;
        if let Some(waited) = late {
            return Err(match run.waiting_for().map(|p| self.group.job_rank(p)) {
                Some(Ok(rank)) => Error::Late { rank, waited },
                _ => onesided_rma::Error::RequestTimeout(self.ep.timeout()).into(),
            });
        }
        spare.give(scratch);
        Ok(())
    }

    /// Runs `exec` (a blocking call's) to completion, advancing the runs
    /// in flight too; keeps its scratch for later calls.
    pub(crate) fn wait<T, I, O>(&self, mut exec: Exec<T, I, O>, spare: &Spare) -> Result<(), Error>
    where
        T: bytemuck::Pod + Send,
        I: AsRef<[T]>,
        O: AsRef<[T]> + AsMut<[T]>,
    {
        // Nothing else to advance (nor to hold it back for) when no run is
        // in flight: only this thread, the Comm's, starts runs. Its
        // receives in place block then.
        let alone = self.idle();
        exec.direct = alone;
        let late = drive(&self.ep, || {
            exec.hold(!alone && self.serial && self.exchanging());
            // A caller's mistake stays one (not the request's failure).
            let done = exec
                .test(&self.ep, &self.group)
                .map_err(|e| match &exec.mismatch {
                    Some(text) => Error::BadCall(text.clone()),
                    None => e,
                })?;
            if !done && !alone {
                self.progress();
            }
            Ok::<_, Error>((done, exec.mark()))
        })?;
        if let Some(waited) = late {
            return Err(match exec.waiting_for(&self.group) {
                Some(rank) => Error::Late { rank, waited },
                None => onesided_rma::Error::RequestTimeout(self.ep.timeout()).into(),
            });
        }
        spare.give(exec.scratch);
        Ok(())
    }
}

/// Calls `step` (which says whether the call is done, and where it is)
/// until the call is done, backing off between calls, afresh whenever the
/// call moves on (a long call is many short waits, not one that ends up
/// sleeping); `Some(waited)` when it did not move for `ep`'s timeout.
/// The backoff (a handle of the endpoint's wait object) is made only
/// once a call has to wait.
fn drive<E>(
    ep: &Endpoint,
    mut step: impl FnMut() -> Result<(bool, u64), E>,
) -> Result<Option<Duration>, E> {
    let (done, mut mark) = step()?;
    if done {
        return Ok(None);
    }
    let (mut backoff, limit) = (ep.backoff(), ep.timeout());
    loop {
        let waited = backoff.pause();
        if waited > limit {
            return Ok(Some(waited));
        }
        let (done, now) = step()?;
        if done {
            return Ok(None);
        }
        if now != mark {
            backoff.reset();
        }
        mark = now;
    }
}

/// A nonblocking collective: a [`Request`]. It owns the buffers handed
/// to the call, as completion-based I/O does: the run works on them in
/// place (no copies), and [`Run::into_buffers`] hands them back once it is
/// complete (a call refused with an error drops the buffers handed to
/// it). Testing it advances every run of its Comm. Dropped before
/// completion, it leaves the other members' call to fail by timeout (a
/// shared-memory run is given up: this member's later calls go on, see
/// `shared`): complete every request, as MPI requires.
///
/// Why owned rather than borrowed buffers: the run must stay reachable
/// from its Comm (any call into the Comm advances it) for as long as it
/// is in flight, and a borrow cannot promise that, since a request can be
/// leaked with `mem::forget` without ending its borrows.
///
/// ```
/// use onesided_collectives::{Comm, Op};
/// use onesided_rma::{Group, Request, Rma};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let world = onesided_fabric::World::init()?; // one rank without a launcher
/// let rma = Rma::new(world.endpoint())?;
/// let comm = Comm::new(&rma, Group::world(world.size()))?;
/// let mut run = comm.iallreduce(vec![2i64; 4], vec![0; 4], Op::SUM)?;
/// while !run.test()? {
///     // compute
/// }
/// let buffers = run.into_buffers()?;
/// assert_eq!(buffers.output, vec![2 * i64::from(world.size()); 4]);
/// # drop((comm, rma));
/// # world.finalize()?;
/// # Ok(())
/// # }
/// ```
pub struct Run<T: bytemuck::Pod + Send> {
    inflight: Arc<Inflight>,
    claim: Claim,
    /// Where the run leaves its buffers ([`Listed::buffers`]).
    buffers: Arc<SpinLock<Option<Buffers<T>>>>,
}

/// A request's hold on its run.
struct Claim {
    /// The run's number in the list.
    id: u64,
    done: bool,
    run: Held,
}

/// Where a request's run is.
enum Held {
    /// In its Comm's list.
    Listed,
    /// Done, and taken out of the list by [`Run::into_buffers`]'s last
    /// test.
    Taken(Box<dyn Advance>),
    /// Handed back with the buffers.
    Out,
}

/// The buffers a nonblocking collective was handed, back from
/// [`Run::into_buffers`].
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Buffers<T> {
    /// The input, as it was handed in (empty for a broadcast or barrier).
    pub input: Vec<T>,
    /// The output, holding the result (a broadcast's buffer; empty for
    /// a barrier).
    pub output: Vec<T>,
}

impl<T: bytemuck::Pod + Send> Run<T> {
    /// Waits for the call to complete (returns at once if it has) and
    /// hands back its buffers.
    ///
    /// # Errors
    /// As [`Request::wait`]: the call failed (its buffers are dropped with
    /// it) or its peers did not move within the timeout.
    pub fn into_buffers(mut self) -> Result<Buffers<T>, Error> {
        self.finish(true)?;
        self.take_buffers()
    }

    /// The buffers of a completed run, taken out of it.
    fn take_buffers(&mut self) -> Result<Buffers<T>, Error> {
        let run = match std::mem::replace(&mut self.claim.run, Held::Out) {
            Held::Listed => self.inflight.remove(self.claim.id),
            Held::Taken(run) => Some(run),
            Held::Out => None,
        };
        if let Some(run) = run {
            run.hand_over(&self.inflight);
        }
        (self.buffers.lock().take()).ok_or_else(|| Error::Failed("the call's run is gone".into()))
    }

    /// As [`Request::wait`], taking the run out of the list with its last
    /// test if `take` asks for it.
    fn finish(&mut self, take: bool) -> Result<(), Error> {
        let (inflight, claim) = (&self.inflight, &mut self.claim);
        match drive(&inflight.ep, || inflight.step(claim, take))? {
            None => Ok(()),
            Some(_) => Err(onesided_rma::Error::RequestTimeout(inflight.ep.timeout()).into()),
        }
    }
}

/// Awaiting a nonblocking collective: its buffers once it completes, as
/// [`Run::into_buffers`]. Each poll advances the call (as
/// [`Request::test`]); between polls the endpoint's progress engine
/// wakes the task ([`onesided_fabric::Endpoint::wake_later`]). A run
/// polled after it returned its buffers fails.
impl<T: bytemuck::Pod + Send> std::future::Future for Run<T> {
    type Output = Result<Buffers<T>, Error>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        if matches!(this.claim.run, Held::Out) {
            return std::task::Poll::Ready(Err(Error::Failed(
                "the call's buffers were handed back already".into(),
            )));
        }
        match this.inflight.step(&mut this.claim, true) {
            Err(e) => std::task::Poll::Ready(Err(e)),
            Ok((true, _)) => std::task::Poll::Ready(this.take_buffers()),
            Ok((false, _)) => {
                this.inflight.ep.wake_later(cx.waker());
                std::task::Poll::Pending
            }
        }
    }
}

impl<T: bytemuck::Pod + Send> Drop for Run<T> {
    /// A run dropped before it completed keeps buffers its peers may
    /// still copy from alive (they are never reused).
    fn drop(&mut self) {
        if !matches!(self.claim.run, Held::Listed) {
            return;
        }
        if let Some(run) = self.inflight.remove(self.claim.id) {
            run.abandon(self.claim.done, &self.inflight);
        }
    }
}

impl<T: bytemuck::Pod + Send> Request for Run<T> {
    type Error = Error;

    fn test(&mut self) -> Result<bool, Error> {
        Ok(self.inflight.step(&mut self.claim, false)?.0)
    }

    fn timeout(&self) -> Duration {
        self.inflight.ep.timeout()
    }

    /// As [`Request::wait`], backing off afresh whenever the run moves on.
    fn wait(&mut self) -> Result<(), Error> {
        self.finish(false)
    }

    fn backoff(&self) -> onesided_fabric::progress::Backoff {
        self.inflight.ep.backoff()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_comms_can_go_to_another_thread() {
        fn send<T: Send>() {}
        send::<Run<u8>>();
        send::<crate::Comm>();
    }

    #[test]
    fn split_gives_disjoint_slices_of_one_buffer_and_refuses_overlaps() {
        let mut buf: Vec<u32> = (0..10).collect();
        let s = |at, len| Slice::new(Buf::Output, at, len);
        let (from, to) = split(&mut buf, s(0, 3), s(5, 3)).unwrap();
        to.copy_from_slice(from);
        assert_eq!(buf, [0, 1, 2, 3, 4, 0, 1, 2, 8, 9]);
        let (from, to) = split(&mut buf, s(7, 3), s(0, 3)).unwrap();
        to.copy_from_slice(from);
        assert_eq!(buf, [2, 8, 9, 3, 4, 0, 1, 2, 8, 9]);
        assert!(split(&mut buf, s(2, 3), s(4, 3)).is_none());
        assert!(split(&mut buf, s(4, 3), s(2, 3)).is_none());
        // Adjacent is disjoint.
        assert!(split(&mut buf, s(0, 5), s(5, 5)).is_some());
    }

    #[test]
    fn carve_cuts_out_the_receives_in_their_order() {
        let mut buf: Vec<u8> = (0..10).collect();
        // Listed out of order; adjacent to each other.
        let pieces: Vec<&mut [u8]> = carve(&mut buf, &[(6, 2), (1, 2), (3, 1)]).collect();
        assert_eq!(pieces.len(), 3);
        assert_eq!(&*pieces[0], &[6, 7]);
        assert_eq!(&*pieces[1], &[1, 2]);
        assert_eq!(&*pieces[2], &[3]);
        for p in pieces {
            p.fill(0);
        }
        assert_eq!(buf, [0, 0, 0, 0, 4, 5, 0, 0, 8, 9]);
        assert_eq!(carve(&mut buf, &[]).count(), 0);
    }
}
