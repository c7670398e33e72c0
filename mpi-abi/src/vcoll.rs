//! The `v` forms of the collectives (`Gatherv`, `Scatterv`,
//! `Allgatherv`, `Alltoallv`, `Iallgatherv`, `Ialltoallv`) and
//! `Reduce_scatter(_block)`. onesided's
//! take blocks in rank order, one after the other: blocks the program
//! places elsewhere (its displacements) are copied to and from such a
//! buffer, and not copied when they already lie so. `Gatherv` and
//! `Scatterv` first broadcast the root's counts (MPI gives them to the
//! root alone; onesided's tree algorithms need them everywhere): one
//! broadcast of p integers more.

use std::ffi::{c_int, c_void};

use crate::abi::{err, Handle};
use crate::coll::{reduce_scatter_typed, root_of, started};
use crate::datatype;
use crate::errors::{finish, Fail};
use crate::request::{Pending, Running};
use crate::runtime::{self, CommEntry};
use crate::{mpi, ptr};

/// Blocks of a `v` call, in bytes: each rank's count and displacement.
pub(crate) struct Layout {
    counts: Vec<usize>,
    displs: Vec<usize>,
}

impl Layout {
    /// From `n` counts and displacements (in elements of `datatype`);
    /// `displs` null for blocks one after the other.
    ///
    /// # Safety
    /// `counts` valid for `n` ints; `displs` null or valid for `n`.
    unsafe fn read(
        n: usize,
        counts: *const c_int,
        displs: *const c_int,
        datatype: Handle,
    ) -> Result<Layout, Fail> {
        let size = datatype::bytes(1, datatype)?;
        // SAFETY: as this function's contract.
        let counts = unsafe { ptr::slice(counts, n, "counts") }?;
        let displs: Option<&[c_int]> = match displs.is_null() {
            true => None,
            // SAFETY: as this function's contract.
            false => Some(unsafe { ptr::slice(displs, n, "displs") }?),
        };
        let mut layout = Layout {
            counts: Vec::with_capacity(n),
            displs: Vec::with_capacity(n),
        };
        let mut next = 0usize;
        for i in 0..n {
            let count = usize::try_from(counts[i])
                .map_err(|_| Fail::new(err::COUNT, format!("count {}", counts[i])))?;
            let displ = match displs {
                Some(d) => {
                    usize::try_from(d[i])
                        .map_err(|_| Fail::new(err::ARG, format!("displacement {}", d[i])))?
                        * size
                }
                None => next,
            };
            layout.counts.push(count * size);
            layout.displs.push(displ);
            next = displ + count * size;
        }
        Ok(layout)
    }

    /// The bytes the program's buffer spans.
    pub(crate) fn span(&self) -> usize {
        (self.counts.iter().zip(&self.displs))
            .map(|(c, d)| c + d)
            .max()
            .unwrap_or(0)
    }

    /// The total of the blocks.
    fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// Whether the blocks lie one after the other from 0.
    fn packed(&self) -> bool {
        let mut next = 0;
        (self.counts.iter().zip(&self.displs)).all(|(c, d)| {
            let ok = *d == next;
            next += c;
            ok
        })
    }

    /// The blocks of `buffer`, one after the other.
    fn pack(&self, buffer: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.total());
        for (c, d) in self.counts.iter().zip(&self.displs) {
            out.extend_from_slice(&buffer[*d..*d + *c]);
        }
        out
    }

    /// Puts the blocks of `packed` where they go in `buffer`.
    pub(crate) fn unpack(&self, packed: &[u8], buffer: &mut [u8]) {
        let mut at = 0;
        for (c, d) in self.counts.iter().zip(&self.displs) {
            buffer[*d..*d + *c].copy_from_slice(&packed[at..at + *c]);
            at += c;
        }
    }
}

/// The root's counts (in elements), broadcast to every rank.
///
/// # Safety
/// At the root, `counts` valid for `n` ints.
unsafe fn root_counts(c: &CommEntry, root: u32, counts: *const c_int) -> Result<Vec<c_int>, Fail> {
    let n = c.size() as usize;
    let mut all = match c.rank == root {
        // SAFETY: as this function's contract.
        true => unsafe { ptr::slice(counts, n, "counts") }?.to_vec(),
        false => vec![0; n],
    };
    c.lock().bcast(root, &mut all)?;
    Ok(all)
}

/// The blocks of a rooted `v` call on `c`: the root's counts, broadcast,
/// at the root's displacements in units of `root_type` (elsewhere, one
/// after the other in units of `own_type`, the rank's own block alone
/// being used).
///
/// # Safety
/// At the root, `counts` and `displs` valid for the group's size.
unsafe fn rooted(
    c: &CommEntry,
    root: u32,
    (counts, displs): (*const c_int, *const c_int),
    (root_type, own_type): (Handle, Handle),
) -> Result<Layout, Fail> {
    let n = c.size() as usize;
    // SAFETY: as this function's contract.
    let counts = unsafe { root_counts(c, root, counts) }?;
    let (displs, typed) = match c.rank == root {
        true => (displs, root_type),
        false => (std::ptr::null(), own_type),
    };
    // SAFETY: counts are ours; displacements at the root only.
    unsafe { Layout::read(n, counts.as_ptr(), displs, typed) }
}

mpi! {
    /// Gathers every member's block into `recvbuf` at `root`, each at its
    /// displacement.
    fn MPI_Gatherv / PMPI_Gatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let root = root_of(&c, root)?;
            let at_root = c.rank == root;
            // SAFETY: the root's counts and displacements (the call's contract).
            let layout = unsafe { rooted(&c, root, (recvcounts, displs), (recvtype, sendtype)) }?;
            let mine = layout.counts[c.rank as usize];
            let own: Vec<u8>;
            let input: &[u8] = match crate::coll::in_place(sendbuf) {
                true if at_root => {
                    let d = layout.displs[c.rank as usize];
                    // SAFETY: the root's buffer spans its blocks (the call's contract).
                    let all = unsafe { ptr::slice(recvbuf.cast::<u8>(), layout.span(), "recvbuf") }?;
                    own = all[d..d + mine].to_vec();
                    &own
                }
                true => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
                false => {
                    let bytes = datatype::bytes(sendcount, sendtype)?;
                    if bytes != mine {
                        return Err(Fail::new(err::TRUNCATE, format!("{bytes} bytes sent to a block of {mine}")));
                    }
                    // SAFETY: sendcount elements at sendbuf (the call's contract).
                    unsafe { ptr::slice(sendbuf.cast::<u8>(), bytes, "sendbuf") }?
                }
            };
            let mut packed = vec![0u8; if at_root { layout.total() } else { 0 }];
            c.lock().gatherv(root, input, &mut packed, &layout.counts)?;
            if at_root {
                // SAFETY: the root's buffer spans its blocks (the call's contract).
                let out = unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), layout.span(), "recvbuf") }?;
                layout.unpack(&packed, out);
            }
            Ok(())
        });
        finish("MPI_Gatherv", comm, result)
    }
}

mpi! {
    /// Sends the block of each rank, at its displacement in `sendbuf` at
    /// `root`, to it.
    fn MPI_Scatterv / PMPI_Scatterv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        displs: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcount: c_int,
        recvtype: Handle,
        root: c_int,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let root = root_of(&c, root)?;
            let at_root = c.rank == root;
            // SAFETY: the root's counts and displacements (the call's contract).
            let layout = unsafe { rooted(&c, root, (sendcounts, displs), (sendtype, recvtype)) }?;
            let mine = layout.counts[c.rank as usize];
            let input = match at_root {
                true => {
                    // SAFETY: the root's buffer spans its blocks (the call's contract).
                    let all = unsafe { ptr::slice(sendbuf.cast::<u8>(), layout.span(), "sendbuf") }?;
                    layout.pack(all)
                }
                false => Vec::new(),
            };
            let mut own = Vec::new();
            let output: &mut [u8] = match crate::coll::in_place(recvbuf) {
                true if at_root => {
                    own.resize(mine, 0);
                    &mut own
                }
                true => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
                false => {
                    let bytes = datatype::bytes(recvcount, recvtype)?;
                    if bytes != mine {
                        return Err(Fail::new(err::TRUNCATE, format!("a block of {mine} bytes into {bytes}")));
                    }
                    // SAFETY: recvcount elements at recvbuf (the call's contract).
                    unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), bytes, "recvbuf") }?
                }
            };
            Ok(c.lock().scatterv(root, &input, output, &layout.counts)?)
        });
        finish("MPI_Scatterv", comm, result)
    }
}

/// An allgatherv's receive blocks and this rank's block.
///
/// # Safety
/// As `MPI_Allgatherv`'s contract.
unsafe fn allgatherv_parts(
    c: &CommEntry,
    (sendbuf, sendcount, sendtype): (*const c_void, c_int, Handle),
    (recvbuf, recvcounts, displs, recvtype): (*mut c_void, *const c_int, *const c_int, Handle),
) -> Result<(Layout, Vec<u8>), Fail> {
    let n = c.size() as usize;
    // SAFETY: n counts and displacements (the call's contract).
    let layout = unsafe { Layout::read(n, recvcounts, displs, recvtype) }?;
    let me = c.rank as usize;
    let input = match crate::coll::in_place(sendbuf) {
        true => {
            // SAFETY: the buffer spans the blocks (the call's contract).
            let out = unsafe { ptr::slice(recvbuf.cast::<u8>(), layout.span(), "recvbuf") }?;
            out[layout.displs[me]..layout.displs[me] + layout.counts[me]].to_vec()
        }
        false => {
            let bytes = datatype::bytes(sendcount, sendtype)?;
            // SAFETY: sendcount elements at sendbuf (the call's contract).
            unsafe { ptr::slice(sendbuf.cast::<u8>(), bytes, "sendbuf") }?.to_vec()
        }
    };
    Ok((layout, input))
}

mpi! {
    /// Gathers every member's block into every `recvbuf`, each at its
    /// displacement.
    fn MPI_Allgatherv / PMPI_Allgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let send = (sendbuf, sendcount, sendtype);
            let recv = (recvbuf, recvcounts, displs, recvtype);
            // SAFETY: as the call's contract.
            let (layout, input) = unsafe { allgatherv_parts(&c, send, recv) }?;
            // SAFETY: the buffer spans the blocks (the call's contract).
            let out = unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), layout.span(), "recvbuf") }?;
            match layout.packed() {
                true => c.lock().allgatherv(&input, &mut out[..layout.total()], &layout.counts)?,
                false => {
                    let mut packed = vec![0u8; layout.total()];
                    c.lock().allgatherv(&input, &mut packed, &layout.counts)?;
                    layout.unpack(&packed, out);
                }
            }
            Ok(())
        });
        finish("MPI_Allgatherv", comm, result)
    }
}

mpi! {
    /// Starts an allgatherv; `recvbuf` holds the blocks at completion.
    fn MPI_Iallgatherv / PMPI_Iallgatherv(
        sendbuf: *const c_void,
        sendcount: c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        displs: *const c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let send = (sendbuf, sendcount, sendtype);
            let recv = (recvbuf, recvcounts, displs, recvtype);
            // SAFETY: as the call's contract.
            let (layout, input) = unsafe { allgatherv_parts(&c, send, recv) }?;
            let output = vec![0u8; layout.total()];
            let run = c.lock().iallgatherv(input, output, &layout.counts)?;
            let pending = Pending::blocks(Running::U8(run), recvbuf.cast(), layout, comm);
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Iallgatherv", comm, result)
    }
}

/// An alltoallv's send blocks, packed send data and receive blocks.
///
/// # Safety
/// As `MPI_Alltoallv`'s contract.
unsafe fn alltoallv_parts(
    c: &CommEntry,
    (sendbuf, sendcounts, sdispls, sendtype): (*const c_void, *const c_int, *const c_int, Handle),
    (recvbuf, recvcounts, rdispls, recvtype): (*mut c_void, *const c_int, *const c_int, Handle),
) -> Result<(Layout, Vec<u8>, Layout), Fail> {
    let n = c.size() as usize;
    // SAFETY: n counts and displacements (the call's contract).
    let recv = unsafe { Layout::read(n, recvcounts, rdispls, recvtype) }?;
    let (send, input) = match crate::coll::in_place(sendbuf) {
        true => {
            // SAFETY: the buffer spans the blocks (the call's contract).
            let out = unsafe { ptr::slice(recvbuf.cast::<u8>(), recv.span(), "recvbuf") }?;
            let send = Layout {
                counts: recv.counts.clone(),
                displs: recv.displs.clone(),
            };
            (send, recv.pack(out))
        }
        false => {
            // SAFETY: n counts and displacements (the call's contract).
            let send = unsafe { Layout::read(n, sendcounts, sdispls, sendtype) }?;
            // SAFETY: the buffer spans the blocks (the call's contract).
            let all = unsafe { ptr::slice(sendbuf.cast::<u8>(), send.span(), "sendbuf") }?;
            let input = send.pack(all);
            (send, input)
        }
    };
    Ok((send, input, recv))
}

mpi! {
    /// Sends each rank its block of `sendbuf` and receives its block into
    /// `recvbuf`, each at its displacement.
    fn MPI_Alltoallv / PMPI_Alltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: Handle,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let sends = (sendbuf, sendcounts, sdispls, sendtype);
            let recvs = (recvbuf, recvcounts, rdispls, recvtype);
            // SAFETY: as the call's contract.
            let (send, input, recv) = unsafe { alltoallv_parts(&c, sends, recvs) }?;
            // SAFETY: the buffer spans the blocks (the call's contract).
            let out = unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), recv.span(), "recvbuf") }?;
            let mut packed = vec![0u8; recv.total()];
            c.lock().alltoallv(&input, &send.counts, &mut packed, &recv.counts)?;
            recv.unpack(&packed, out);
            Ok(())
        });
        finish("MPI_Alltoallv", comm, result)
    }
}

mpi! {
    /// Starts an alltoallv; `recvbuf` holds the blocks at completion.
    fn MPI_Ialltoallv / PMPI_Ialltoallv(
        sendbuf: *const c_void,
        sendcounts: *const c_int,
        sdispls: *const c_int,
        sendtype: Handle,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        rdispls: *const c_int,
        recvtype: Handle,
        comm: Handle,
        request: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let sends = (sendbuf, sendcounts, sdispls, sendtype);
            let recvs = (recvbuf, recvcounts, rdispls, recvtype);
            // SAFETY: as the call's contract.
            let (send, input, recv) = unsafe { alltoallv_parts(&c, sends, recvs) }?;
            let output = vec![0u8; recv.total()];
            let run = c.lock().ialltoallv(input, &send.counts, output, &recv.counts)?;
            let pending = Pending::blocks(Running::U8(run), recvbuf.cast(), recv, comm);
            // SAFETY: as the call's contract.
            unsafe { started(request, pending) }
        });
        finish("MPI_Ialltoallv", comm, result)
    }
}

mpi! {
    /// Combines every member's `sendbuf` by `op` and scatters block `r`
    /// (of `recvcounts[r]` elements) to rank `r`.
    fn MPI_Reduce_scatter / PMPI_Reduce_scatter(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcounts: *const c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let n = c.size() as usize;
            // SAFETY: n counts (the call's contract).
            let counts = unsafe { ptr::slice(recvcounts, n, "recvcounts") }?;
            let counts = (counts.iter())
                .map(|&k| usize::try_from(k).map_err(|_| Fail::new(err::COUNT, format!("count {k}"))))
                .collect::<Result<Vec<usize>, Fail>>()?;
            // SAFETY: the buffers hold their counts (the call's contract).
            unsafe { reduce_scatter_typed(&c, (sendbuf, recvbuf), &counts, datatype, op) }
        });
        finish("MPI_Reduce_scatter", comm, result)
    }
}

mpi! {
    /// `MPI_Reduce_scatter` with `recvcount` elements to every rank.
    fn MPI_Reduce_scatter_block / PMPI_Reduce_scatter_block(
        sendbuf: *const c_void,
        recvbuf: *mut c_void,
        recvcount: c_int,
        datatype: Handle,
        op: Handle,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let count = usize::try_from(recvcount).map_err(|_| Fail::new(err::COUNT, format!("count {recvcount}")))?;
            let counts = vec![count; c.size() as usize];
            // SAFETY: the buffers hold their counts (the call's contract).
            unsafe { reduce_scatter_typed(&c, (sendbuf, recvbuf), &counts, datatype, op) }
        });
        finish("MPI_Reduce_scatter_block", comm, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_pack_and_unpack_by_their_displacements() {
        let layout = Layout {
            counts: vec![2, 0, 3],
            displs: vec![4, 0, 0],
        };
        assert!(!layout.packed());
        assert_eq!(layout.span(), 6);
        let buffer = [10, 11, 12, 13, 14, 15];
        assert_eq!(layout.pack(&buffer), vec![14, 15, 10, 11, 12]);
        let mut back = [0u8; 6];
        layout.unpack(&[1, 2, 3, 4, 5], &mut back);
        assert_eq!(back, [3, 4, 5, 0, 1, 2]);
        let packed = Layout {
            counts: vec![1, 2],
            displs: vec![0, 1],
        };
        assert!(packed.packed());
    }
}
