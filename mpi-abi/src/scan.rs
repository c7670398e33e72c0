//! `MPI_Scan` and `MPI_Exscan`: recursive doubling over point-to-point
//! messages on a context of the communicator's own (apart from the
//! program's messages). Round k exchanges the partial result with rank
//! `rank ^ 2^k`; what comes from a lower rank is the left operand, so a
//! non-commutative operation is applied in rank order. Cost in p:
//! ceil(log2 p) rounds, one message each way per round, of the whole
//! vector; memory three vectors.

use std::ffi::{c_int, c_void};

use onesided::rma::Op;

use crate::abi::{err, Handle};
use crate::coll::in_place;
use crate::datatype::{self, by_reducible};
use crate::errors::{finish, Fail};
use crate::op::Typed;
use crate::runtime::{self, CommEntry};
use crate::{mpi, p2p, ptr};

/// The tag that numbers the scans' context apart from the communicator's.
const SCAN_CONTEXT: u64 = 0x5ca9;

/// The point-to-point context of communicator `c`'s scans.
pub(crate) fn context(c: &CommEntry) -> u64 {
    c.objects.tagged(SCAN_CONTEXT).key()
}

/// The exchanges of `rank` of `n`: the round (the same number on both
/// sides), the partner, and whether the partner is the lower rank. A
/// round whose partner would be past the last rank has none.
pub(crate) fn partners(n: u32, rank: u32) -> Vec<(usize, u32, bool)> {
    let mut rounds = Vec::new();
    let (mut mask, mut round) = (1u32, 0usize);
    while mask < n {
        let partner = rank ^ mask;
        if partner < n {
            rounds.push((round, partner, partner < rank));
        }
        mask = mask.saturating_mul(2);
        round += 1;
    }
    rounds
}

/// `inout = inout op input`, element by element.
fn apply<T: Typed>(op: &Op<T>, inout: &mut [T], input: &[T]) -> Result<(), Fail> {
    match op {
        Op::Builtin(b) => {
            for (a, x) in inout.iter_mut().zip(input) {
                *a = T::combine(*b, *a, *x)
                    .ok_or_else(|| Fail::new(err::OP, format!("{b:?} on {}", T::NAME)))?;
            }
        }
        Op::User { f, .. } => f(inout, input),
    }
    Ok(())
}

/// `left op right`, into a new vector.
fn combined<T: Typed>(op: &Op<T>, left: &[T], right: &[T]) -> Result<Vec<T>, Fail> {
    let mut out = left.to_vec();
    apply(op, &mut out, right)?;
    Ok(out)
}

/// A scan's arguments.
struct Scan {
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    datatype: Handle,
    op: Handle,
    /// `MPI_Exscan`: this rank's own operand left out.
    exclusive: bool,
}

/// Runs `s` on `c` with elements of `T`.
///
/// # Safety
/// The buffers of `s` are valid for `count` elements of `T`.
unsafe fn scan_as<T: Typed>(
    c: &CommEntry,
    s: &Scan,
    element: datatype::Element,
) -> Result<(), Fail> {
    let op = crate::op::of::<T>(s.op, element, s.datatype)?;
    let input: Vec<T> = match in_place(s.send) {
        // SAFETY: as this function's contract.
        true => unsafe { ptr::slice(s.recv.cast::<T>().cast_const(), s.count, "recvbuf") }?,
        // SAFETY: as this function's contract.
        false => unsafe { ptr::slice(s.send.cast::<T>(), s.count, "sendbuf") }?,
    }
    .to_vec();
    let ctx = context(c);
    let mut partial = input.clone();
    let mut result = (!s.exclusive).then_some(input);
    let mut received = vec![T::zeroed(); s.count];
    for (round, partner, lower) in partners(c.size(), c.rank) {
        let tag = round as i32;
        let bytes = bytemuck::cast_slice_mut(&mut received);
        p2p::exchange(
            c,
            ctx,
            (partner, tag),
            bytemuck::cast_slice(&partial),
            bytes,
        )?;
        if lower {
            partial = combined(&op, &received, &partial)?;
            result = Some(match result {
                Some(r) => combined(&op, &received, &r)?,
                None => received.clone(),
            });
        } else {
            apply(&op, &mut partial, &received)?;
        }
    }
    if let Some(result) = result {
        // SAFETY: as this function's contract.
        let out = unsafe { ptr::slice_mut(s.recv.cast::<T>(), s.count, "recvbuf") }?;
        out.copy_from_slice(&result);
    }
    Ok(())
}

/// Runs `s`, of a derived datatype, by the program's operation `op`: the
/// same rounds on whole vectors in the datatype's layout (the function
/// counts the datatype's elements), sent packed.
///
/// # Safety
/// The buffers of `s` are valid for `count` elements of its datatype.
unsafe fn scan_derived(c: &CommEntry, s: &Scan, op: crate::op::UserOp) -> Result<(), Fail> {
    use crate::tree::Typed;
    let map = crate::derived::committed(s.datatype)?;
    let from = if in_place(s.send) {
        s.recv.cast_const()
    } else {
        s.send
    };
    // SAFETY: as this function's contract.
    let mut packed = unsafe { crate::derived::pack(&map, from.cast(), s.count) };
    let len = c_int::try_from(s.count).map_err(|_| Fail::new(err::COUNT, "over 2^31 elements"))?;
    let ctx = context(c);
    let mut partial = Typed::new(&map, s.count);
    // SAFETY: partial holds count elements in the layout.
    unsafe { crate::derived::unpack(&map, &packed, partial.base(), s.count) };
    let mut result: Option<Typed> = None;
    if !s.exclusive {
        let mut own = Typed::new(&map, s.count);
        // SAFETY: as above.
        unsafe { crate::derived::unpack(&map, &packed, own.base(), s.count) };
        result = Some(own);
    }
    for (round, partner, lower) in partners(c.size(), c.rank) {
        // SAFETY: partial holds count elements in the layout.
        let mine = unsafe { crate::derived::pack(&map, partial.base(), s.count) };
        p2p::exchange(c, ctx, (partner, round as i32), &mine, &mut packed)?;
        let mut received = Typed::new(&map, s.count);
        // SAFETY: received holds count elements in the layout.
        unsafe { crate::derived::unpack(&map, &packed, received.base(), s.count) };
        // SAFETY (each call): two buffers of count elements of the datatype.
        if lower {
            // partial = received op partial; result = received op result.
            // SAFETY: as above.
            unsafe {
                op.call(
                    received.base().cast(),
                    partial.base().cast(),
                    len,
                    s.datatype,
                )
            };
            result = Some(match result.take() {
                Some(mut r) => {
                    // SAFETY: as above.
                    unsafe { op.call(received.base().cast(), r.base().cast(), len, s.datatype) };
                    r
                }
                None => received,
            });
        } else {
            // partial = partial op received: the function combines into
            // its second argument.
            // SAFETY: as above.
            unsafe {
                op.call(
                    partial.base().cast(),
                    received.base().cast(),
                    len,
                    s.datatype,
                )
            };
            partial = received;
        }
    }
    if let Some(mut r) = result {
        // SAFETY: r holds count elements in the layout.
        let bytes = unsafe { crate::derived::pack(&map, r.base(), s.count) };
        // SAFETY: as this function's contract.
        unsafe { crate::derived::unpack(&map, &bytes, s.recv.cast(), s.count) };
    }
    Ok(())
}

/// Runs `s` on communicator `comm`.
///
/// # Safety
/// The buffers of `s` are valid for `count` elements of its datatype.
unsafe fn scan(comm: Handle, s: Scan) -> Result<(), Fail> {
    let c = runtime::comm(comm)?;
    if datatype::predefined(s.datatype).is_none() {
        if let Some(op) = crate::tree::user_op(s.op) {
            // SAFETY: as this function's contract.
            return unsafe { scan_derived(&c, &s, op) };
        }
    }
    let (_, element) = datatype::of(s.datatype)?;
    // SAFETY: as this function's contract, for the datatype's Rust type.
    unsafe {
        by_reducible!(element, T => scan_as::<T>(&c, &s, element), Err(Fail::new(err::OP, format!("operation {:#x} on datatype {:#x}", s.op, s.datatype))))
    }
}

/// `count` as a length.
fn count_of(count: c_int) -> Result<usize, Fail> {
    usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))
}

mpi! {
    /// Combines the `sendbuf` of ranks 0 to this one, in rank order, into
    /// `recvbuf`.
    fn MPI_Scan / PMPI_Scan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
    ) -> c_int {
        let result = count_of(count).and_then(|count| {
            let s = Scan { send: sendbuf, recv: recvbuf, count, datatype, op, exclusive: false };
            // SAFETY: as the call's contract.
            unsafe { scan(comm, s) }
        });
        finish("MPI_Scan", comm, result)
    }
}

mpi! {
    /// Combines the `sendbuf` of the ranks below this one, in rank order,
    /// into `recvbuf` (left as it is at rank 0).
    fn MPI_Exscan / PMPI_Exscan(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        count: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
    ) -> c_int {
        let result = count_of(count).and_then(|count| {
            let s = Scan { send: sendbuf, recv: recvbuf, count, datatype, op, exclusive: true };
            // SAFETY: as the call's contract.
            unsafe { scan(comm, s) }
        });
        finish("MPI_Exscan", comm, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the rounds with strings as the operands (concatenation:
    /// not commutative): every rank ends with the ranks up to it in order.
    #[test]
    fn rounds_combine_every_lower_rank_in_order() {
        for n in 1..=9u32 {
            let rounds: Vec<Vec<(usize, u32, bool)>> = (0..n).map(|r| partners(n, r)).collect();
            let mut partial: Vec<String> = (0..n).map(|r| format!("{r},")).collect();
            let mut result = partial.clone();
            let mut exclusive: Vec<String> = vec![String::new(); n as usize];
            for k in 0..6 {
                let before = partial.clone();
                for r in 0..n as usize {
                    let Some(&(_, partner, lower)) = rounds[r].iter().find(|e| e.0 == k) else {
                        continue;
                    };
                    // Partners agree on the round.
                    assert!(rounds[partner as usize].contains(&(k, r as u32, !lower)));
                    let got = &before[partner as usize];
                    if lower {
                        partial[r] = format!("{got}{}", partial[r]);
                        result[r] = format!("{got}{}", result[r]);
                        exclusive[r] = format!("{got}{}", exclusive[r]);
                    } else {
                        partial[r] = format!("{}{got}", partial[r]);
                    }
                }
            }
            for r in 0..n as usize {
                let want: String = (0..=r).map(|i| format!("{i},")).collect();
                assert_eq!(result[r], want, "n {n} rank {r}");
                assert_eq!(exclusive[r], want[..want.len() - format!("{r},").len()]);
            }
        }
    }
}
