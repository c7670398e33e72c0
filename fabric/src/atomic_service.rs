//! The atomics service: atomics a target applies for its peers, from its
//! progress engine, with CPU atomics on its registered memory. It serves
//! [`crate::Atomics::Software`] endpoints: providers without atomics of their own,
//! and the choice MPICH makes on `tcp` (its atomics are active messages
//! there), so that both run the same provider code.
//!
//! Because the target applies each element with a CPU atomic, a peer's
//! atomic is atomic against the target's own CPU atomics on that memory
//! (and those of processes on its host that map it): one kind of atomicity
//! for everyone, as MPI's element-wise atomicity of accumulates asks.
//!
//! Cost: an operation of at most [`max_elements`] elements is one request
//! and one reply (one round trip, as a provider atomic); a longer one is
//! several. Memory per process: the service's standing receives (see
//! [`crate::control`]; posted at the first region peers may write),
//! whatever the number of processes, and one entry per such region. A
//! lock release is a request whose reply is left to the endpoint
//! (`Endpoint::add_detached`), as a provider atomic's completion is.
//!
//! Wire format, little-endian. Request: `[action u8][datatype u8][op
//! u8][0; 5][key u64][address u64][operand][compare]`, `compare` only for a
//! compare-and-swap (as long as `operand`). Reply: `[status u8][0; 7]`,
//! then, when the status is 0, the elements' previous values (as long as
//! `operand`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::atomic::{apply, AtomicOp, Datatype};
use crate::control::MAX_REQUEST;
use crate::mapping::Mapping;
use crate::memory::Access;

/// The control-plane service number of atomics.
pub(crate) const ATOMIC: u16 = 0x0002;

/// Bytes before a request's operand, and before a reply's values.
const HEADER: usize = 24;
const REPLY_HEADER: usize = 8;

/// What a request does to each element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// `t = op(t, x)`.
    Apply(AtomicOp),
    /// `t = new` if `t == compare` (bitwise).
    CompareSwap,
}

/// One atomic for a target to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    pub action: Action,
    pub datatype: Datatype,
    /// The target region's key.
    pub key: u64,
    /// The first element's address, as the peer addresses the region.
    pub address: u64,
    /// The operands (the new values of a compare-and-swap).
    pub operand: &'a [u8],
    /// The compared values of a compare-and-swap (else empty).
    pub compare: &'a [u8],
}

/// Why a target did not apply a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No region of this key (freed, or never registered here).
    UnknownRegion = 1,
    /// Elements outside the region, or misaligned.
    OutOfRange = 2,
    /// The region does not allow remote reads and writes.
    NotPermitted = 3,
    /// A request that does not decode.
    Malformed = 4,
}

/// The most elements of `size` bytes one request carries.
pub(crate) fn max_elements(size: usize, action: Action) -> usize {
    let per = match action {
        Action::Apply(_) => size,
        Action::CompareSwap => 2 * size,
    };
    (MAX_REQUEST - HEADER) / per
}

impl Request<'_> {
    /// The request's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.operand.len() + self.compare.len());
        let (action, op) = match self.action {
            Action::Apply(op) => (0u8, op as u8),
            Action::CompareSwap => (1, 0),
        };
        out.extend_from_slice(&[action, self.datatype as u8, op, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&self.key.to_le_bytes());
        out.extend_from_slice(&self.address.to_le_bytes());
        out.extend_from_slice(self.operand);
        out.extend_from_slice(self.compare);
        out
    }

    /// Reads a request; `None` when it does not decode.
    pub fn decode(body: &[u8]) -> Option<Request<'_>> {
        let (head, values) = body.split_at_checked(HEADER)?;
        let datatype = *Datatype::ALL.get(head[1] as usize)?;
        let action = match head[0] {
            0 => Action::Apply(*AtomicOp::ALL.get(head[2] as usize)?),
            1 => Action::CompareSwap,
            _ => return None,
        };
        let word = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().unwrap_or_default());
        let (operand, compare) = match action {
            Action::Apply(_) => (values, &values[values.len()..]),
            Action::CompareSwap if values.len().is_multiple_of(2) => {
                values.split_at(values.len() / 2)
            }
            Action::CompareSwap => return None,
        };
        let whole = operand.len().is_multiple_of(datatype.size());
        (whole && !operand.is_empty()).then_some(Request {
            action,
            datatype,
            key: word(8),
            address: word(16),
            operand,
            compare,
        })
    }
}

/// The previous values of a reply, or the target's refusal; `None` when
/// the reply is malformed (not `len` values).
pub(crate) fn decode_reply(reply: &[u8], len: usize) -> Option<Result<&[u8], Refusal>> {
    let (head, values) = reply.split_at_checked(REPLY_HEADER)?;
    match head[0] {
        0 => (values.len() == len).then_some(Ok(values)),
        1 => Some(Err(Refusal::UnknownRegion)),
        2 => Some(Err(Refusal::OutOfRange)),
        3 => Some(Err(Refusal::NotPermitted)),
        _ => Some(Err(Refusal::Malformed)),
    }
}

/// A registered region peers may apply atomics to.
pub(crate) struct Region {
    /// Its memory, kept alive while a request is applied to it.
    pub memory: Arc<Mapping>,
    /// The address peers give for its first byte (0, or its virtual
    /// address under `FI_MR_VIRT_ADDR`).
    pub base: u64,
    pub access: Access,
}

/// The regions of an endpoint, by key: registering adds one, dropping a
/// region removes it before its memory goes.
#[derive(Clone, Default)]
pub(crate) struct Registry(Arc<Mutex<HashMap<u64, Region>>>);

impl Registry {
    pub fn insert(&self, key: u64, region: Region) {
        self.regions().insert(key, region);
    }

    pub fn remove(&self, key: u64) {
        self.regions().remove(&key);
    }

    fn regions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Region>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies the request `body` and returns the reply.
    pub fn serve(&self, body: &[u8]) -> Vec<u8> {
        let outcome = match Request::decode(body) {
            None => Err(Refusal::Malformed),
            Some(request) => match self.regions().get(&request.key) {
                None => Err(Refusal::UnknownRegion),
                Some(region) => apply_request(region, &request),
            },
        };
        let mut reply = vec![0u8; REPLY_HEADER];
        match outcome {
            Ok(previous) => reply.extend_from_slice(&previous),
            Err(refusal) => reply[0] = refusal as u8,
        }
        reply
    }
}

/// Applies `request` to `region`, element by element, each with one CPU
/// atomic; returns the previous values.
fn apply_request(region: &Region, request: &Request<'_>) -> Result<Vec<u8>, Refusal> {
    if !region
        .access
        .contains(Access::REMOTE_READ | Access::REMOTE_WRITE)
    {
        return Err(Refusal::NotPermitted);
    }
    let size = request.datatype.size();
    let start = request
        .address
        .checked_sub(region.base)
        .and_then(|o| usize::try_from(o).ok())
        .ok_or(Refusal::OutOfRange)?;
    let end = start
        .checked_add(request.operand.len())
        .filter(|&e| e <= region.memory.len())
        .ok_or(Refusal::OutOfRange)?;
    if !start.is_multiple_of(size) || end == start {
        return Err(Refusal::OutOfRange);
    }
    let bits = |bytes: &[u8]| {
        let mut word = [0u8; 8];
        word[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(word)
    };
    let mut previous = Vec::with_capacity(request.operand.len());
    for (i, x) in request.operand.chunks(size).enumerate() {
        let x = bits(x);
        let update = |t: u64| match request.action {
            Action::Apply(op) => Some(apply(request.datatype, op, t, x)),
            Action::CompareSwap => {
                let c = bits(&request.compare[i * size..(i + 1) * size]);
                (t == c).then_some(x)
            }
        };
        let old = region
            .memory
            .update(start + i * size, size, update)
            .map_err(|_| Refusal::OutOfRange)?;
        previous.extend_from_slice(&old.to_le_bytes()[..size]);
    }
    Ok(previous)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions(access: Access) -> (Registry, Arc<Mapping>) {
        let memory = Arc::new(Mapping::anonymous(64).unwrap());
        let registry = Registry::default();
        let region = Region {
            memory: Arc::clone(&memory),
            base: 4096,
            access,
        };
        registry.insert(7, region);
        (registry, memory)
    }

    fn request<'a>(
        action: Action,
        address: u64,
        operand: &'a [u8],
        compare: &'a [u8],
    ) -> Request<'a> {
        Request {
            action,
            datatype: Datatype::U32,
            key: 7,
            address,
            operand,
            compare,
        }
    }

    #[test]
    fn requests_round_trip() {
        let ops = [1u8, 0, 0, 0, 2, 0, 0, 0];
        for r in [
            request(Action::Apply(AtomicOp::Max), 4100, &ops, &[]),
            request(Action::CompareSwap, 4096, &ops[..4], &ops[4..]),
        ] {
            assert_eq!(Request::decode(&r.encode()), Some(r));
        }
        let good = request(Action::Apply(AtomicOp::Sum), 0, &ops, &[]).encode();
        assert_eq!(Request::decode(&good[..HEADER]), None, "no operand");
        assert_eq!(
            Request::decode(&good[..HEADER + 3]),
            None,
            "partial element"
        );
        let mut bad = good.clone();
        bad[1] = 10;
        assert_eq!(Request::decode(&bad), None, "datatype");
        bad = good;
        bad[0] = 2;
        assert_eq!(Request::decode(&bad), None, "action");
    }

    #[test]
    fn applies_element_by_element_and_returns_previous_values() {
        let (registry, memory) = regions(Access::REMOTE_READ | Access::REMOTE_WRITE);
        memory.write_bytes(4, &[5, 0, 0, 0, 9, 0, 0, 0]).unwrap();
        let ops = [3u8, 0, 0, 0, 4, 0, 0, 0];
        let reply =
            registry.serve(&request(Action::Apply(AtomicOp::Sum), 4100, &ops, &[]).encode());
        assert_eq!(
            decode_reply(&reply, 8),
            Some(Ok(&[5u8, 0, 0, 0, 9, 0, 0, 0][..]))
        );
        let mut now = [0u8; 8];
        memory.read_bytes(4, &mut now).unwrap();
        assert_eq!(now, [8, 0, 0, 0, 13, 0, 0, 0]);
        // Compare-and-swap: swaps only on equality.
        let swap = |compare: u8| {
            let (new, compare) = ([42u8, 0, 0, 0], [compare, 0, 0, 0]);
            registry.serve(&request(Action::CompareSwap, 4100, &new, &compare).encode())
        };
        assert_eq!(decode_reply(&swap(7), 4), Some(Ok(&[8u8, 0, 0, 0][..])));
        assert_eq!(decode_reply(&swap(8), 4), Some(Ok(&[8u8, 0, 0, 0][..])));
        memory.read_bytes(4, &mut now[..4]).unwrap();
        assert_eq!(now[..4], [42, 0, 0, 0]);
    }

    #[test]
    fn refuses_what_it_cannot_apply_and_changes_nothing() {
        let (registry, memory) = regions(Access::REMOTE_READ | Access::REMOTE_WRITE);
        let ops = [1u8, 0, 0, 0];
        let refused = |address: u64, key: u64| {
            let mut r = request(Action::Apply(AtomicOp::Sum), address, &ops, &[]);
            r.key = key;
            decode_reply(&registry.serve(&r.encode()), 4)
                .unwrap()
                .unwrap_err()
        };
        assert_eq!(refused(4096, 8), Refusal::UnknownRegion);
        assert_eq!(refused(4095, 7), Refusal::OutOfRange);
        assert_eq!(refused(4096 + 62, 7), Refusal::OutOfRange, "misaligned");
        assert_eq!(refused(4096 + 64, 7), Refusal::OutOfRange);
        assert_eq!(refused(u64::MAX - 1, 7), Refusal::OutOfRange);
        assert_eq!(
            decode_reply(&registry.serve(b"short"), 4),
            Some(Err(Refusal::Malformed))
        );
        let mut all = [0u8; 64];
        memory.read_bytes(0, &mut all).unwrap();
        assert_eq!(all, [0u8; 64]);
        let (read_only, _) = regions(Access::REMOTE_READ);
        let r = request(Action::Apply(AtomicOp::NoOp), 4096, &ops, &[]);
        assert_eq!(
            decode_reply(&read_only.serve(&r.encode()), 4),
            Some(Err(Refusal::NotPermitted))
        );
        registry.remove(7);
        assert_eq!(refused(4096, 7), Refusal::UnknownRegion);
    }

    #[test]
    fn a_request_holds_at_most_a_control_request() {
        for size in [1, 2, 4, 8] {
            for action in [Action::Apply(AtomicOp::Sum), Action::CompareSwap] {
                let n = max_elements(size, action);
                let per = if action == Action::CompareSwap { 2 } else { 1 };
                assert!(HEADER + n * size * per <= MAX_REQUEST);
                assert!(HEADER + (n + 1) * size * per > MAX_REQUEST);
            }
        }
    }
}
