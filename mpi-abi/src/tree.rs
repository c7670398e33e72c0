//! Reductions by a program's operation on a derived datatype
//! (`MPI_Reduce`, `MPI_Allreduce`, `MPI_Reduce_scatter`): the operation's function counts
//! elements of the datatype and reads them where the datatype places
//! them, so the vector is never split (onesided's collectives split
//! vectors at element boundaries of their own). A binomial tree towards
//! rank 0 over point-to-point, in rank order (the lower ranks' operand
//! always on the left, as a non-commutative operation needs), then the
//! result to the root (`Reduce`), broadcast (`Allreduce`) or scattered
//! (`Reduce_scatter`). Cost in p: ceil(log2 p) rounds of one whole vector
//! each way, then one message, a broadcast or a scatter; memory two
//! vectors in the datatype's layout.

use std::ffi::{c_int, c_void};

use crate::abi::{err, Handle};
use crate::coll::in_place;
use crate::errors::Fail;
use crate::op::UserOp;
use crate::runtime::{self, CommEntry};
use crate::typemap::TypeMap;
use crate::{derived, p2p};

/// The tag that numbers these reductions' context apart from the
/// communicator's.
const TREE_CONTEXT: u64 = 0x7ee;

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

/// Reduces `count` elements of derived `datatype` at `send` (at `recv`
/// for `MPI_IN_PLACE`) by the program's operation `op` over `c`, into
/// `recv` at `root` (everywhere when `None`).
///
/// # Safety
/// The buffers hold `count` elements of the datatype where the call
/// reads and writes them.
pub(crate) unsafe fn reduce(
    c: &CommEntry,
    (send, recv): (*const c_void, *mut c_void),
    (count, datatype): (usize, Handle),
    (op, root): (UserOp, Option<u32>),
) -> Result<(), Fail> {
    let map = derived::committed(datatype)?;
    let ctx = c.objects.tagged(TREE_CONTEXT).key();
    let me = c.rank;
    // SAFETY: as this function's contract.
    let mut result = unsafe { to_zero(c, (send, recv), (count, datatype), op) }?;
    match root {
        None => c.lock().bcast(0, &mut result)?,
        Some(0) => {}
        Some(r) if me == 0 => p2p::send_to(c, ctx, (r, 0), &result)?,
        Some(r) if me == r => p2p::recv_from(c, ctx, (0, 0), &mut result)?,
        Some(_) => {}
    }
    if root.is_none_or(|r| r == me) {
        // SAFETY: as this function's contract.
        unsafe { derived::unpack(&map, &result, recv.cast(), count) };
    }
    Ok(())
}

/// Reduces as [`reduce`], then scatters block `r` (`counts[r]` elements
/// of the datatype, one after the other) to rank `r`'s `recv`
/// (`MPI_Reduce_scatter`).
///
/// # Safety
/// The send buffer (or, in place, the receive buffer) holds the counts'
/// total; the receive buffer this rank's count.
pub(crate) unsafe fn reduce_scatter(
    c: &CommEntry,
    (send, recv): (*const c_void, *mut c_void),
    (counts, datatype): (&[usize], Handle),
    op: UserOp,
) -> Result<(), Fail> {
    let map = derived::committed(datatype)?;
    let total = counts.iter().try_fold(0usize, |t, &k| t.checked_add(k));
    let total = total.ok_or_else(|| Fail::new(err::COUNT, "counts past what an address holds"))?;
    derived::bytes_of(&map, total)?;
    // SAFETY: as this function's contract.
    let whole = unsafe { to_zero(c, (send, recv), (total, datatype), op) }?;
    let bytes: Vec<usize> = counts.iter().map(|&k| k * map.size).collect();
    let mine = counts[c.rank as usize];
    let mut block = vec![0u8; mine * map.size];
    let input = if c.rank == 0 { &whole[..] } else { &[][..] };
    c.lock().scatterv(0, input, &mut block, &bytes)?;
    // SAFETY: as this function's contract.
    unsafe { derived::unpack(&map, &block, recv.cast(), mine) };
    Ok(())
}

/// The binomial tree towards rank 0: the result, packed, at rank 0
/// (zeros elsewhere).
///
/// # Safety
/// As [`reduce`].
unsafe fn to_zero(
    c: &CommEntry,
    (send, recv): (*const c_void, *mut c_void),
    (count, datatype): (usize, Handle),
    op: UserOp,
) -> Result<Vec<u8>, Fail> {
    let map = derived::committed(datatype)?;
    derived::bytes_of(&map, count)?;
    let from = if in_place(send) {
        recv.cast_const()
    } else {
        send
    };
    // SAFETY: as this function's contract.
    let mut packed = unsafe { derived::pack(&map, from.cast(), count) };
    let ctx = c.objects.tagged(TREE_CONTEXT).key();
    let (n, me) = (c.size(), c.rank);
    let (mut acc, mut other) = (Typed::new(&map, count), Typed::new(&map, count));
    // SAFETY: acc holds count elements in the datatype's layout.
    unsafe { derived::unpack(&map, &packed, acc.base(), count) };
    let len = c_int::try_from(count).map_err(|_| Fail::new(err::COUNT, "over 2^31 elements"))?;
    let mut mask = 1u32;
    while mask < n {
        match round(n, me, mask) {
            Some((to, true)) => {
                // SAFETY: acc holds count elements in the layout.
                let bytes = unsafe { derived::pack(&map, acc.base(), count) };
                p2p::send_to(c, ctx, (to, mask as i32), &bytes)?;
                break;
            }
            Some((from, false)) => {
                p2p::recv_from(c, ctx, (from, mask as i32), &mut packed)?;
                // SAFETY: other holds count elements in the layout.
                unsafe { derived::unpack(&map, &packed, other.base(), count) };
                // The program's function computes inoutvec = invec op
                // inoutvec: the lower ranks' operand (acc) is invec.
                // SAFETY: two buffers of count elements of the datatype.
                unsafe { op.call(acc.base().cast(), other.base().cast(), len, datatype) };
                std::mem::swap(&mut acc, &mut other);
            }
            None => {}
        }
        mask <<= 1;
    }
    Ok(match me {
        // SAFETY: acc holds count elements in the layout.
        0 => unsafe { derived::pack(&map, acc.base(), count) },
        _ => vec![0u8; map.size * count],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the rounds with strings (concatenation is not
    /// commutative): rank 0 ends with every rank's operand in order.
    #[test]
    fn the_tree_combines_every_rank_in_order() {
        for n in 1..=9u32 {
            let mut acc: Vec<Option<String>> = (0..n).map(|r| Some(format!("{r},"))).collect();
            let mut mask = 1;
            while mask < n {
                let mut sent = vec![None; n as usize];
                for r in 0..n {
                    if let Some((to, true)) = round(n, r, mask) {
                        if let Some(v) = acc[r as usize].take() {
                            sent[to as usize] = Some((r, v));
                        }
                    }
                }
                for r in 0..n {
                    if let Some((from, false)) = round(n, r, mask) {
                        if let (Some((s, v)), Some(mine)) =
                            (sent[r as usize].take(), acc[r as usize].as_mut())
                        {
                            assert_eq!(s, from);
                            mine.push_str(&v);
                        }
                    }
                }
                mask <<= 1;
            }
            let want: String = (0..n).map(|r| format!("{r},")).collect();
            assert_eq!(acc[0].as_deref(), Some(want.as_str()), "n {n}");
        }
    }
}
