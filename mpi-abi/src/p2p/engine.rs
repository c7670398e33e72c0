//! The point-to-point engine: MPI messages over the endpoint's tagged
//! messages, one per process behind one lock.
//!
//! Wire: every message starts with a [`Header`] and travels with the
//! tag [`HEADER_TAG`] from its sender's job rank; the header names the
//! communicator (its context, the same on every member), the sender's
//! rank in it, the MPI tag and the sender's number for the pair (the
//! receiver hands headers to matching in that order, [`InOrder`]).
//!
//! - **Eager** (at most [`Engine::eager`] bytes, not synchronous): the
//!   data follows the header in the same message. The send is complete
//!   once posted (the endpoint sends a copy). One message.
//! - **Announced** (larger, up to [`UNASKED`], where the provider queues
//!   large unexpected messages: `tcp`, `sockets`): the header with the length and the
//!   sender's transfer number, then the data at once on tag
//!   [`DATA_TAG`]` | number`, straight from the program's buffer; the
//!   receiver, once a receive matches the header, receives the data
//!   straight into the program's buffer. Two messages, no round trip.
//! - **Rendezvous** (larger otherwise, and every `MPI_Ssend`): the header
//!   alone (RTS); the receiver, once a receive matches it, posts the
//!   receive of the data and answers CTS; the sender then sends the data.
//!   Three messages; the data is never unexpected at the receiver
//!   (libfabric 1.17's `shm` hangs with several large unexpected
//!   messages, see the fabric's `matching` docs). The send completes
//!   when its data has gone.
//! - A message to oneself never touches the fabric: eager data is
//!   copied into the matcher, a larger or synchronous send waits,
//!   matched, for the receive to copy it.
//!
//! Cost in p: a process keeps one posted header receive (of the eager
//! size plus the header) per peer it has received from, sent a
//! rendezvous to or posted an `MPI_ANY_SOURCE` receive or probe on (all
//! members of that communicator), from the first such use to
//! `MPI_Finalize`: memory O(peers used), no message to peers it never
//! uses. Progress is made by point-to-point calls and by `MPI_Wait`,
//! `MPI_Test` and their forms, as MPICH without a progress thread.

use std::collections::HashMap;
use std::ffi::c_int;

use std::sync::Arc;

use onesided::fabric::{Endpoint, Transfer};

use super::matching::{Envelope, InOrder, Matcher, Pattern, Turn};
use crate::abi::err;
use crate::errors::Fail;
use crate::typemap::TypeMap;

/// The tag of every header message (below collectives' tags, which set
/// bit 38).
const HEADER_TAG: u64 = 1 << 37;
/// The tags of rendezvous data: this bit and the transfer's number.
const DATA_TAG: u64 = 1 << 36;
/// Bytes of a header on the wire.
const HEADER: usize = 40;
/// The eager limit where the provider queues large unexpected messages.
const EAGER: usize = 16 << 10;
/// The largest message whose data comes unasked: above it, the data is
/// worth a round trip to land straight in the posted receive rather than
/// in the provider's unexpected queue first (measured over `tcp`: 1 MiB
/// messages unasked went at 0.7x MPICH's bandwidth).
const UNASKED: usize = 128 << 10;

/// What a header message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Eager = 0,
    Rts = 1,
    Cts = 2,
    /// The data follows on its own tag, unasked.
    Announce = 3,
}

/// The header of every message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    kind: Kind,
    /// The communicator's context.
    ctx: u64,
    /// The sender's number for this pair.
    seq: u64,
    /// Eager: the data's length; RTS: the message's length.
    len: u64,
    tag: i32,
    /// The sender's rank in the communicator.
    source: u32,
    /// RTS and CTS: the sender's transfer number.
    id: u32,
}

impl Header {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.ctx.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.tag.to_le_bytes());
        out.extend_from_slice(&self.source.to_le_bytes());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&(self.kind as u32).to_le_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<Header> {
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or_default());
        let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or_default());
        if bytes.len() < HEADER {
            return None;
        }
        let kind = match half(36) {
            0 => Kind::Eager,
            1 => Kind::Rts,
            2 => Kind::Cts,
            3 => Kind::Announce,
            _ => return None,
        };
        Some(Header {
            kind,
            ctx: word(0),
            seq: word(8),
            len: word(16),
            tag: half(24) as i32,
            source: half(28),
            id: half(32),
        })
    }
}

/// A message no receive has taken yet.
#[derive(Debug)]
pub(crate) enum Body {
    /// Its data.
    Eager(Vec<u8>),
    /// Announced by the sender, the data to come on its own tag.
    Remote(Remote),
    /// Sent by this process: its send request `id`, `len` bytes.
    Local { id: u64, len: usize },
}

impl Body {
    /// The message's length in bytes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Body::Eager(data) => data.len(),
            Body::Remote(Remote { len, .. }) | Body::Local { len, .. } => *len,
        }
    }
}

/// A message whose data comes on its own tag: the sender's (job rank
/// `from`) transfer `id` of `len` bytes; `answer`: sent once the receiver
/// answers CTS (else it comes unasked).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Remote {
    from: u32,
    id: u32,
    len: usize,
    answer: bool,
}

/// What a completed receive got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Received {
    pub envelope: Envelope,
    /// Bytes written to the receive buffer.
    pub len: usize,
    /// `MPI_SUCCESS`, or `MPI_ERR_TRUNCATE` when the message was longer.
    pub class: c_int,
    /// Whether the receive was cancelled (`MPI_Cancel`) before a message
    /// matched it.
    pub cancelled: bool,
}

/// A receive request.
struct Recv {
    /// The program's buffer (valid until the request completes).
    buf: usize,
    cap: usize,
    /// The named source's job rank (`None` for `MPI_ANY_SOURCE`).
    from: Option<u32>,
    ctx: u64,
    state: RecvState,
    /// For a non-contiguous datatype: where the packed message goes.
    unpack: Option<Unpack>,
}

/// A receive into a buffer of packed bytes that is unpacked into the
/// program's by a datatype when it completes.
pub(crate) struct Unpack {
    /// The packed bytes (the receive's buffer).
    pub temp: Vec<u8>,
    pub map: Arc<TypeMap>,
    /// The program's buffer and the count of datatype elements it holds.
    pub base: usize,
    pub count: usize,
}

enum RecvState {
    Posted,
    /// Matched an RTS; the data comes in `transfer`: straight into the
    /// program's buffer, or, when it is too small (`truncated`), into
    /// the endpoint's, of which the part that fits is copied.
    Pulling {
        transfer: Transfer,
        envelope: Envelope,
        truncated: bool,
    },
    Done(Result<Received, Fail>),
}

/// A send request not complete when posted.
struct Send {
    /// The program's buffer (valid until the request completes).
    buf: usize,
    len: usize,
    /// The receiver's job rank.
    to: u32,
    state: SendState,
    /// The packed bytes of a non-contiguous datatype (the send's buffer).
    keep: Option<Vec<u8>>,
}

enum SendState {
    /// Announced (RTS), not answered yet; to oneself: not matched yet.
    Announced,
    /// The data goes, straight from the program's buffer.
    Sending(Transfer),
    Done(Result<(), Fail>),
}

/// Where a send goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route {
    /// The communicator's context.
    pub ctx: u64,
    /// The receiver's job rank.
    pub to: u32,
    /// This process's rank in the communicator.
    pub source: u32,
    pub tag: i32,
}

/// The engine of one process.
pub(crate) struct Engine {
    ep: Endpoint,
    me: u32,
    eager: usize,
    /// Whether data above the eager limit may come unasked (the provider
    /// queues large unexpected messages).
    unasked: bool,
    /// The provider's inject size.
    inject: usize,
    /// The message being sent, kept for the next.
    wire: Vec<u8>,
    /// One posted header receive per peer used.
    inbox: HashMap<u32, Transfer>,
    order: HashMap<u32, InOrder<Vec<u8>>>,
    next_seq: HashMap<u32, u64>,
    /// Matching, by communicator context.
    comms: HashMap<u64, Matcher<u64, Body>>,
    recvs: HashMap<u64, Recv>,
    sends: HashMap<u64, Send>,
    /// Receives whose data is in flight.
    pulling: Vec<u64>,
    /// Sends whose data is in flight.
    sending: Vec<u64>,
    next_id: u64,
}

impl Engine {
    /// The engine over `ep`.
    pub(crate) fn new(ep: &Endpoint) -> Engine {
        let granted = ep.granted();
        // Where unexpected messages above the inject size may hang the
        // provider, eager messages stay within it.
        let eager = match granted.queues_large_unexpected() {
            true => EAGER,
            false => granted.inject_size().saturating_sub(HEADER),
        };
        Engine {
            ep: ep.clone(),
            me: ep.rank(),
            eager,
            unasked: granted.queues_large_unexpected(),
            inject: granted.inject_size(),
            wire: Vec::new(),
            inbox: HashMap::new(),
            order: HashMap::new(),
            next_seq: HashMap::new(),
            comms: HashMap::new(),
            recvs: HashMap::new(),
            sends: HashMap::new(),
            pulling: Vec::new(),
            sending: Vec::new(),
            next_id: 1,
        }
    }

    /// The endpoint.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// A request number: below 2^32, as a rendezvous number travels (one
    /// would collide only with a request 2^32 numbers older, in flight).
    fn id(&mut self) -> u64 {
        self.next_id = (self.next_id + 1) & 0xffff_ffff;
        self.next_id
    }

    /// Keeps a header receive posted for `peer`.
    fn listen(&mut self, peer: u32) -> Result<(), Fail> {
        if peer != self.me && !self.inbox.contains_key(&peer) {
            let transfer = self.ep.recv_start(peer, HEADER_TAG, HEADER + self.eager)?;
            self.inbox.insert(peer, transfer);
        }
        Ok(())
    }

    /// Keeps header receives posted for the peers `pattern` may match
    /// among `members` (job ranks): its source, or every member.
    fn listen_for(&mut self, pattern: Pattern, members: &[u32]) -> Result<(), Fail> {
        match pattern.source {
            Some(s) => self.listen(members[s as usize]),
            None => members.iter().try_for_each(|&peer| self.listen(peer)),
        }
    }

    /// Sends a header (and `data`) to job rank `to`, numbered for the pair.
    fn post(&mut self, to: u32, mut header: Header, data: &[u8]) -> Result<(), Fail> {
        let seq = self.next_seq.entry(to).or_insert(0);
        header.seq = *seq;
        *seq += 1;
        let mut wire = std::mem::take(&mut self.wire);
        wire.clear();
        header.encode(&mut wire);
        wire.extend_from_slice(data);
        let sent = match wire.len() <= self.inject {
            // Injected: the provider has its copy when this returns.
            true => self.ep.send(to, HEADER_TAG, &wire),
            // The endpoint sends its own copy: dropped, the transfer goes
            // on.
            false => self.ep.send_start(to, HEADER_TAG, &wire).map(drop),
        };
        self.wire = wire;
        Ok(sent?)
    }

    /// Starts sending `len` bytes at `buf` along `route`; `Some(id)` of
    /// the send request when it is not complete yet (a rendezvous, or
    /// `sync`).
    ///
    /// # Safety
    /// `buf` is valid for reads of `len` bytes until the request
    /// completes.
    pub(crate) unsafe fn send(
        &mut self,
        route: Route,
        (buf, len): (*const u8, usize),
        sync: bool,
    ) -> Result<Option<u64>, Fail> {
        // SAFETY: as this function's contract.
        let data = unsafe { crate::ptr::slice(buf, len, "buf") }?;
        let envelope = Envelope {
            source: route.source,
            tag: route.tag,
        };
        let eager = !sync && len <= self.eager;
        if route.to == self.me {
            if eager {
                self.arrive(route.ctx, envelope, Payload::Borrowed(data))?;
                return Ok(None);
            }
            let id = self.id();
            self.sends.insert(id, Send::new(buf, len, route.to));
            self.arrive(route.ctx, envelope, Payload::Local { id, len })?;
            return Ok(Some(id));
        }
        let mut header = Header {
            kind: Kind::Eager,
            ctx: route.ctx,
            seq: 0,
            len: len as u64,
            tag: route.tag,
            source: route.source,
            id: 0,
        };
        if eager {
            self.post(route.to, header, data)?;
            return Ok(None);
        }
        let id = self.id();
        header.id = id as u32;
        let mut send = Send::new(buf, len, route.to);
        if sync || !self.unasked || len > UNASKED {
            // The receiver answers once a receive matches.
            header.kind = Kind::Rts;
            self.listen(route.to)?;
            self.post(route.to, header, &[])?;
        } else {
            header.kind = Kind::Announce;
            self.post(route.to, header, &[])?;
            // SAFETY: the send's buffer (this function's contract).
            send.state = unsafe { self.send_data(route.to, id as u32, (buf, len)) };
            self.sending.push(id);
        }
        self.sends.insert(id, send);
        Ok(Some(id))
    }

    /// Starts sending the data of transfer `id` to `to`.
    ///
    /// # Safety
    /// `data` is a send's buffer, valid and unwritten until its request
    /// completes (as [`Engine::send`]'s contract), which is once the
    /// transfer has.
    unsafe fn send_data(&self, to: u32, id: u32, data: (*const u8, usize)) -> SendState {
        let tag = DATA_TAG | u64::from(id);
        // SAFETY: as this function's contract.
        match unsafe { self.ep.send_start_borrowed(to, tag, data) } {
            Ok(transfer) => SendState::Sending(transfer),
            Err(e) => SendState::Done(Err(e.into())),
        }
    }

    /// Posts a receive into `cap` bytes at `buf` of a message matching
    /// `pattern` on communicator `ctx` (`members`: its job ranks, whose
    /// header receives an `MPI_ANY_SOURCE` receive needs); its request.
    ///
    /// # Safety
    /// `buf` is valid for writes of `cap` bytes, and nothing else reaches
    /// them, until the request completes.
    pub(crate) unsafe fn recv(
        &mut self,
        ctx: u64,
        pattern: Pattern,
        (buf, cap): (*mut u8, usize),
        members: &[u32],
    ) -> Result<u64, Fail> {
        let from = pattern.source.map(|s| members[s as usize]);
        self.listen_for(pattern, members)?;
        let id = self.id();
        self.recvs.insert(
            id,
            Recv {
                buf: buf as usize,
                cap,
                from,
                ctx,
                state: RecvState::Posted,
                unpack: None,
            },
        );
        let matcher = self.comms.entry(ctx).or_default();
        if let Some((envelope, body)) = matcher.post(pattern, id) {
            self.take(id, envelope, Payload::from(body))?;
        }
        Ok(id)
    }

    /// The envelope and length of the first message waiting on `ctx`
    /// that `pattern` matches (`MPI_Iprobe`); it stays waiting.
    pub(crate) fn probe(
        &mut self,
        ctx: u64,
        pattern: Pattern,
        members: &[u32],
    ) -> Result<Option<(Envelope, usize)>, Fail> {
        self.listen_for(pattern, members)?;
        self.progress()?;
        let matcher = self.comms.entry(ctx).or_default();
        Ok(matcher.probe(pattern).map(|(e, body)| (e, body.len())))
    }

    /// Gives request `id` up: a receive is withdrawn from matching, and
    /// a transfer over the program's buffer is cancelled and settled
    /// (dropped), so that nothing refers to its buffer any more.
    pub(crate) fn abandon(&mut self, id: u64) {
        if let Some(r) = self.recvs.remove(&id) {
            if let Some(m) = self.comms.get_mut(&r.ctx) {
                m.cancel(&id);
            }
        }
        drop(self.sends.remove(&id));
        self.pulling.retain(|&p| p != id);
        self.sending.retain(|&s| s != id);
    }

    /// Cancels receive `id` if no message has matched it yet (it
    /// completes, cancelled); whether it was.
    pub(crate) fn cancel_recv(&mut self, id: u64) -> bool {
        let Some(r) = self.recvs.get_mut(&id) else {
            return false;
        };
        if !matches!(r.state, RecvState::Posted) {
            return false;
        }
        if let Some(m) = self.comms.get_mut(&r.ctx) {
            m.cancel(&id);
        }
        let envelope = Envelope { source: 0, tag: 0 };
        r.state = RecvState::Done(Ok(Received {
            envelope,
            len: 0,
            class: err::SUCCESS,
            cancelled: true,
        }));
        true
    }

    /// Keeps `packed` (the buffer send `id` was started over) until the
    /// send completes.
    pub(crate) fn keep_packed(&mut self, id: u64, packed: Vec<u8>) {
        if let Some(s) = self.sends.get_mut(&id) {
            s.keep = Some(packed);
        }
    }

    /// Receive `id` was posted into `unpack.temp`: unpacks it into the
    /// program's buffer when it completes.
    ///
    /// # Safety
    /// The program's buffer is valid for `count` elements of the map
    /// until the request completes.
    pub(crate) unsafe fn packed_into(&mut self, id: u64, unpack: Unpack) {
        if let Some(r) = self.recvs.get_mut(&id) {
            r.unpack = Some(unpack);
        }
    }

    /// What completed receive `id` got, leaving it complete (`None`
    /// while it is not, or for a failed one).
    pub(crate) fn recv_peek(&self, id: u64) -> Option<Received> {
        match self.recvs.get(&id).map(|r| &r.state) {
            Some(RecvState::Done(Ok(got))) => Some(*got),
            _ => None,
        }
    }

    /// Whether receive `id` is complete (or unknown).
    pub(crate) fn recv_is_done(&self, id: u64) -> bool {
        !matches!(
            self.recvs.get(&id).map(|r| &r.state),
            Some(RecvState::Posted | RecvState::Pulling { .. })
        )
    }

    /// Whether send `id` is complete (or unknown).
    pub(crate) fn send_is_done(&self, id: u64) -> bool {
        self.sends
            .get(&id)
            .is_none_or(|s| matches!(s.state, SendState::Done(_)))
    }

    /// Takes the first message waiting on `ctx` that `pattern` matches
    /// (`MPI_Mprobe`): its envelope and body, for [`Engine::recv_matched`].
    pub(crate) fn mprobe(
        &mut self,
        ctx: u64,
        pattern: Pattern,
        members: &[u32],
    ) -> Result<Option<(Envelope, Body)>, Fail> {
        self.listen_for(pattern, members)?;
        self.progress()?;
        Ok(self.comms.entry(ctx).or_default().take_first(pattern))
    }

    /// Receives a message [`Engine::mprobe`] took, into `cap` bytes at
    /// `buf`; its request.
    ///
    /// # Safety
    /// As [`Engine::recv`].
    pub(crate) unsafe fn recv_matched(
        &mut self,
        ctx: u64,
        (envelope, body): (Envelope, Body),
        (buf, cap): (*mut u8, usize),
    ) -> Result<u64, Fail> {
        let id = self.id();
        let recv = Recv {
            buf: buf as usize,
            cap,
            from: None,
            ctx,
            state: RecvState::Posted,
            unpack: None,
        };
        self.recvs.insert(id, recv);
        self.take(id, envelope, Payload::from(body))?;
        Ok(id)
    }

    /// Receive `id`'s outcome once complete (the request is then gone).
    pub(crate) fn recv_done(&mut self, id: u64) -> Option<Result<Received, Fail>> {
        match self.recvs.get(&id).map(|r| &r.state) {
            Some(RecvState::Done(_)) => {
                let recv = self.recvs.remove(&id)?;
                let RecvState::Done(outcome) = recv.state else {
                    return None;
                };
                if let (Ok(got), Some(u)) = (&outcome, recv.unpack) {
                    let data = &u.temp[..got.len.min(u.temp.len())];
                    // SAFETY: the program's buffer of `count` elements,
                    // valid until the request completes, which is now
                    // (the contract of Engine::packed_into).
                    unsafe { crate::derived::unpack(&u.map, data, u.base as *mut u8, u.count) };
                }
                Some(outcome)
            }
            Some(_) => None,
            None => Some(Err(Fail::new(err::REQUEST, format!("no receive {id}")))),
        }
    }

    /// Send `id`'s outcome once complete (the request is then gone).
    pub(crate) fn send_done(&mut self, id: u64) -> Option<Result<(), Fail>> {
        match self.sends.get(&id).map(|s| &s.state) {
            Some(SendState::Done(_)) => match self.sends.remove(&id)?.state {
                SendState::Done(outcome) => Some(outcome),
                _ => None,
            },
            Some(_) => None,
            None => Some(Err(Fail::new(err::REQUEST, format!("no send {id}")))),
        }
    }

    /// Ends requests that wait for a peer that has ended: a receive
    /// naming it, a send to it not yet answered.
    pub(crate) fn fail_dead(&mut self) {
        let ranks = self.ep.ranks();
        for (id, r) in self.recvs.iter_mut() {
            if let (RecvState::Posted, Some(from)) = (&r.state, r.from) {
                if ranks.is_dead(from) {
                    if let Some(matcher) = self.comms.get_mut(&r.ctx) {
                        matcher.cancel(id);
                    }
                    r.state = RecvState::Done(Err(dead(from)));
                }
            }
        }
        for s in self.sends.values_mut() {
            if matches!(s.state, SendState::Announced) && ranks.is_dead(s.to) {
                s.state = SendState::Done(Err(dead(s.to)));
            }
        }
    }

    /// Forgets communicator `ctx` (freed) once nothing waits on it.
    pub(crate) fn forget(&mut self, ctx: u64) {
        if self.comms.get(&ctx).is_some_and(|m| m.is_empty()) {
            self.comms.remove(&ctx);
        }
    }

    /// Takes in what arrived and moves rendezvous data on.
    ///
    /// # Errors
    /// A failed receive of a header (the endpoint's error).
    pub(crate) fn progress(&mut self) -> Result<(), Fail> {
        let peers: Vec<u32> = self.inbox.keys().copied().collect();
        for peer in peers {
            // A bounded number per peer, so that one busy sender does not
            // keep the others waiting.
            for _ in 0..16 {
                let Some(transfer) = self.inbox.get_mut(&peer) else {
                    break;
                };
                if !transfer.test()? {
                    break;
                }
                // The next receive is posted before this message is read.
                let fresh = self.ep.recv_start(peer, HEADER_TAG, HEADER + self.eager)?;
                let Some(done) = self.inbox.insert(peer, fresh) else {
                    break;
                };
                self.header(peer, done.data())?;
            }
        }
        let mut i = 0;
        while i < self.pulling.len() {
            let id = self.pulling[i];
            if self.pull(id)? {
                self.pulling.swap_remove(i);
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.sending.len() {
            let id = self.sending[i];
            if self.push(id) {
                self.sending.swap_remove(i);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// A header message (and its data) from job rank `peer`.
    fn header(&mut self, peer: u32, message: &[u8]) -> Result<(), Fail> {
        let Some(header) = Header::decode(message) else {
            return Err(Fail::new(
                err::INTERN,
                format!("a malformed message from job rank {peer}"),
            ));
        };
        let order = self.order.entry(peer).or_default();
        match order.arrive(header.seq) {
            Turn::Now => self.handle(peer, header, &message[HEADER..])?,
            Turn::Later => order.hold(header.seq, message.to_vec()),
            Turn::Stale => {}
        }
        while let Some(held) = self.order.get_mut(&peer).and_then(InOrder::next_ready) {
            if let Some(header) = Header::decode(&held) {
                self.handle(peer, header, &held[HEADER..])?;
            }
        }
        Ok(())
    }

    /// A header from `peer`, in its turn.
    fn handle(&mut self, peer: u32, header: Header, data: &[u8]) -> Result<(), Fail> {
        let envelope = Envelope {
            source: header.source,
            tag: header.tag,
        };
        match header.kind {
            Kind::Eager => self.arrive(header.ctx, envelope, Payload::Borrowed(data)),
            Kind::Rts | Kind::Announce => {
                let remote = Remote {
                    from: peer,
                    id: header.id,
                    len: usize::try_from(header.len).unwrap_or(usize::MAX),
                    answer: header.kind == Kind::Rts,
                };
                self.arrive(header.ctx, envelope, Payload::Remote(remote))
            }
            Kind::Cts => {
                let send = self.sends.get_mut(&u64::from(header.id));
                let announced =
                    |s: &&mut Send| s.to == peer && matches!(s.state, SendState::Announced);
                let Some(send) = send.filter(announced) else {
                    return Ok(());
                };
                let data = (send.buf as *const u8, send.len);
                // SAFETY: a send's buffer, valid until its request
                // completes (the contract of Engine::send).
                let state = unsafe { self.send_data(peer, header.id, data) };
                if let Some(send) = self.sends.get_mut(&u64::from(header.id)) {
                    send.state = state;
                }
                self.sending.push(u64::from(header.id));
                Ok(())
            }
        }
    }

    /// A message for communicator `ctx`: to the receive it matches, or
    /// kept.
    fn arrive(&mut self, ctx: u64, envelope: Envelope, payload: Payload<'_>) -> Result<(), Fail> {
        let matcher = self.comms.entry(ctx).or_default();
        match matcher.arrive(envelope) {
            Some(id) => self.take(id, envelope, payload),
            None => {
                matcher.keep(envelope, payload.into_body());
                Ok(())
            }
        }
    }

    /// Receive `id` matched a message.
    fn take(&mut self, id: u64, envelope: Envelope, payload: Payload<'_>) -> Result<(), Fail> {
        let Some(recv) = self.recvs.get(&id) else {
            return Ok(());
        };
        let (buf, cap) = (recv.buf as *mut u8, recv.cap);
        // SAFETY (each deliver below): the receive's buffer, valid until
        // its request completes (the contract of Engine::recv).
        let outcome = match payload {
            // SAFETY: as above.
            Payload::Borrowed(data) => unsafe { deliver(envelope, data, (buf, cap)) },
            // SAFETY: as above.
            Payload::Owned(data) => unsafe { deliver(envelope, &data, (buf, cap)) },
            Payload::Local { id: send, len } => {
                let from = self.sends.get_mut(&send);
                let outcome = match &from {
                    Some(s) => {
                        // SAFETY: the sender's buffer stays valid until its
                        // request completes, which is now.
                        let data = unsafe { crate::ptr::slice(s.buf as *const u8, len, "buf") };
                        // SAFETY: as above.
                        data.and_then(|data| unsafe { deliver(envelope, data, (buf, cap)) })
                    }
                    None => Err(Fail::new(err::INTERN, "a local send vanished")),
                };
                if let Some(s) = from {
                    s.state = SendState::Done(Ok(()));
                }
                outcome
            }
            Payload::Remote(Remote {
                from,
                id: rdv,
                len,
                answer,
            }) => {
                let tag = DATA_TAG | u64::from(rdv);
                let truncated = len > cap;
                let transfer = match truncated {
                    true => self.ep.recv_start(from, tag, len)?,
                    // SAFETY: the receive's buffer, valid and the
                    // engine's until its request completes (the contract
                    // of Engine::recv), which is once the transfer has.
                    false => unsafe { self.ep.recv_start_borrowed(from, tag, (buf, len)) }?,
                };
                let cts = Header {
                    kind: Kind::Cts,
                    ctx: self.recvs.get(&id).map_or(0, |r| r.ctx),
                    seq: 0,
                    len: 0,
                    tag: 0,
                    source: 0,
                    id: rdv,
                };
                if answer {
                    self.post(from, cts, &[])?;
                }
                if let Some(recv) = self.recvs.get_mut(&id) {
                    recv.state = RecvState::Pulling {
                        transfer,
                        envelope,
                        truncated,
                    };
                }
                self.pulling.push(id);
                return Ok(());
            }
        };
        if let Some(recv) = self.recvs.get_mut(&id) {
            recv.state = RecvState::Done(outcome);
        }
        Ok(())
    }

    /// Tests receive `id`'s data; whether it is done.
    fn pull(&mut self, id: u64) -> Result<bool, Fail> {
        let Some(recv) = self.recvs.get_mut(&id) else {
            return Ok(true);
        };
        let RecvState::Pulling {
            transfer,
            envelope,
            truncated,
        } = &mut recv.state
        else {
            return Ok(true);
        };
        let outcome = match transfer.test_alive() {
            Ok(false) => return Ok(false),
            // SAFETY: the receive's buffer, valid until its request
            // completes (the contract of Engine::recv).
            Ok(true) if *truncated => unsafe {
                deliver(*envelope, transfer.data(), (recv.buf as *mut u8, recv.cap))
            },
            Ok(true) => Ok(Received {
                envelope: *envelope,
                len: transfer.len(),
                class: err::SUCCESS,
                cancelled: false,
            }),
            Err(e) => Err(Fail::from(e)),
        };
        recv.state = RecvState::Done(outcome);
        Ok(true)
    }

    /// Tests send `id`'s data; whether it is done.
    fn push(&mut self, id: u64) -> bool {
        let Some(send) = self.sends.get_mut(&id) else {
            return true;
        };
        let SendState::Sending(transfer) = &mut send.state else {
            return true;
        };
        send.state = match transfer.test_alive() {
            Ok(false) => return false,
            Ok(true) => SendState::Done(Ok(())),
            Err(e) => SendState::Done(Err(e.into())),
        };
        true
    }
}

impl Send {
    fn new(buf: *const u8, len: usize, to: u32) -> Send {
        Send {
            buf: buf as usize,
            len,
            to,
            state: SendState::Announced,
            keep: None,
        }
    }
}

/// A message as it reaches matching.
enum Payload<'a> {
    /// Eager data still in the endpoint's buffer.
    Borrowed(&'a [u8]),
    /// Eager data kept before.
    Owned(Vec<u8>),
    Remote(Remote),
    Local {
        id: u64,
        len: usize,
    },
}

impl Payload<'_> {
    fn into_body(self) -> Body {
        match self {
            Payload::Borrowed(data) => Body::Eager(data.to_vec()),
            Payload::Owned(data) => Body::Eager(data),
            Payload::Remote(remote) => Body::Remote(remote),
            Payload::Local { id, len } => Body::Local { id, len },
        }
    }
}

impl From<Body> for Payload<'_> {
    fn from(body: Body) -> Self {
        match body {
            Body::Eager(data) => Payload::Owned(data),
            Body::Remote(remote) => Payload::Remote(remote),
            Body::Local { id, len } => Payload::Local { id, len },
        }
    }
}

/// Copies a message into a receive buffer of `cap` bytes at `buf`.
///
/// # Safety
/// `buf` is valid for writes of `cap` bytes (a receive's buffer, by the
/// contract of [`Engine::recv`]).
unsafe fn deliver(
    envelope: Envelope,
    data: &[u8],
    (buf, cap): (*mut u8, usize),
) -> Result<Received, Fail> {
    let len = data.len().min(cap);
    // SAFETY: as this function's contract.
    let dest = unsafe { crate::ptr::slice_mut(buf, len, "buf") }?;
    dest.copy_from_slice(&data[..len]);
    Ok(Received {
        envelope,
        len,
        class: match data.len() > cap {
            true => err::TRUNCATE,
            false => err::SUCCESS,
        },
        cancelled: false,
    })
}

/// The failure of a request waiting for job rank `rank`, which ended.
fn dead(rank: u32) -> Fail {
    Fail::new(err::PROC_ABORTED, format!("job rank {rank} has ended"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let h = Header {
            kind: Kind::Rts,
            ctx: 0x1234_5678_9abc_def0,
            seq: 7,
            len: 1 << 33,
            tag: -5,
            source: 3,
            id: 99,
        };
        let mut wire = Vec::new();
        h.encode(&mut wire);
        assert_eq!(wire.len(), HEADER);
        assert_eq!(Header::decode(&wire), Some(h));
        assert_eq!(Header::decode(&wire[..HEADER - 1]), None);
    }
}
