//! The `v` forms of the collectives (`Gatherv`, `Scatterv`,
//! `Allgatherv`, `Alltoallv`, `Iallgatherv`, `Ialltoallv`) and
//! `Reduce_scatter(_block)`. onesided's take blocks in rank order, one
//! after the other, as bytes: the program's blocks (at its displacements,
//! of any committed datatype) are packed into such a buffer and unpacked
//! from it, and taken as they are when they already lie so. `Gatherv`
//! and `Scatterv` first broadcast the root's block sizes in bytes (MPI
//! gives its counts to the root alone; onesided's tree algorithms need
//! them everywhere): one broadcast of p integers more.

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::abi::{err, Handle};
use crate::coll::{reduce_scatter_typed, root_of, started};
use crate::derived;
use crate::errors::{finish, Fail};
use crate::request::{Pending, Running};
use crate::runtime::{self, CommEntry};
use crate::typemap::TypeMap;
use crate::{mpi, ptr};

/// Blocks of a `v` call: each rank's block in packed bytes, and where the
/// blocks lie in the program's buffer (unknown off the root of a rooted
/// call, where only the root's buffer has blocks).
pub(crate) struct Layout {
    /// Packed bytes of each block.
    counts: Vec<usize>,
    place: Option<Placement>,
}

/// Where the blocks of a `v` call lie: elements of `map` at
/// displacements in its extents.
struct Placement {
    map: Arc<TypeMap>,
    elements: Vec<usize>,
    displs: Vec<isize>,
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
        let map = derived::committed(datatype)?;
        // SAFETY: as this function's contract.
        let counts = unsafe { ptr::slice(counts, n, "counts") }?;
        let given: Option<&[c_int]> = match displs.is_null() {
            true => None,
            // SAFETY: as this function's contract.
            false => Some(unsafe { ptr::slice(displs, n, "displs") }?),
        };
        let mut place = Placement {
            map,
            elements: Vec::with_capacity(n),
            displs: Vec::with_capacity(n),
        };
        let mut next = 0isize;
        for i in 0..n {
            let count = usize::try_from(counts[i])
                .map_err(|_| Fail::new(err::COUNT, format!("count {}", counts[i])))?;
            let displ = given.map_or(next, |d| d[i] as isize);
            place.elements.push(count);
            place.displs.push(displ);
            next = displ.wrapping_add(count as isize);
        }
        let size = place.map.size;
        let counts = (place.elements.iter())
            .map(|&e| {
                e.checked_mul(size)
                    .ok_or_else(|| Fail::new(err::COUNT, format!("count {e}")))
            })
            .collect::<Result<Vec<usize>, Fail>>()?;
        Ok(Layout {
            counts,
            place: Some(place),
        })
    }

    /// Blocks of `counts` packed bytes whose place is not known here.
    fn sized(counts: Vec<usize>) -> Layout {
        Layout {
            counts,
            place: None,
        }
    }

    /// The total of the blocks, in packed bytes.
    fn total(&self) -> usize {
        self.counts.iter().sum()
    }

    /// The blocks' place, where known.
    fn placement(&self) -> Result<&Placement, Fail> {
        (self.place.as_ref()).ok_or_else(|| Fail::new(err::INTERN, "the blocks lie at the root"))
    }

    /// The bytes the blocks take from `base` when they are packed already
    /// (a contiguous datatype, blocks one after the other from 0).
    fn packed_span(&self) -> Option<usize> {
        let p = self.place.as_ref()?;
        let mut next = 0isize;
        let consecutive = (p.elements.iter().zip(&p.displs)).all(|(&e, &d)| {
            let ok = d == next;
            next += e as isize;
            ok
        });
        (p.map.is_dense() && consecutive).then(|| self.total())
    }

    /// The address of block `i` in the program's buffer at `base`.
    fn at(p: &Placement, base: usize, i: usize) -> usize {
        (base as isize).wrapping_add(p.displs[i].wrapping_mul(p.map.extent())) as usize
    }

    /// Block `i` of the program's buffer at `base`, packed.
    ///
    /// # Safety
    /// The block is valid for reads.
    unsafe fn block(&self, base: *const u8, i: usize) -> Result<Vec<u8>, Fail> {
        let p = self.placement()?;
        let at = Self::at(p, base as usize, i) as *const u8;
        // SAFETY: as this function's contract.
        Ok(unsafe { derived::pack(&p.map, at, p.elements[i]) })
    }

    /// Every block of the program's buffer at `base`, packed one after
    /// the other.
    ///
    /// # Safety
    /// The blocks are valid for reads.
    unsafe fn pack(&self, base: *const u8) -> Result<Vec<u8>, Fail> {
        let mut out = Vec::with_capacity(self.total());
        for i in 0..self.counts.len() {
            // SAFETY: as this function's contract.
            out.extend_from_slice(&unsafe { self.block(base, i) }?);
        }
        Ok(out)
    }

    /// Puts the blocks of `packed` where they go in the program's buffer
    /// at `base`.
    ///
    /// # Safety
    /// The blocks are valid for writes, and nothing else reaches them.
    pub(crate) unsafe fn unpack(&self, packed: &[u8], base: *mut u8) -> Result<(), Fail> {
        let p = self.placement()?;
        let mut from = 0;
        for (i, &len) in self.counts.iter().enumerate() {
            let at = Self::at(p, base as usize, i) as *mut u8;
            let part = packed.get(from..from + len).unwrap_or_default();
            // SAFETY: as this function's contract.
            unsafe { derived::unpack(&p.map, part, at, p.elements[i]) };
            from += len;
        }
        Ok(())
    }
}

/// `count` elements of `datatype` at `buf` as packed bytes: the program's
/// own when contiguous.
///
/// # Safety
/// The elements are valid for reads, for as long as the result lives.
unsafe fn packed<'a>(
    buf: *const c_void,
    count: c_int,
    datatype: Handle,
    what: &str,
) -> Result<Cow<'a, [u8]>, Fail> {
    let map = derived::committed(datatype)?;
    let n = usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))?;
    Ok(match map.is_dense() {
        // SAFETY: as this function's contract.
        true => Cow::Borrowed(unsafe {
            ptr::slice(buf.cast::<u8>(), derived::bytes_of(&map, n)?, what)
        }?),
        // SAFETY: as this function's contract.
        false => Cow::Owned(unsafe { derived::pack(&map, buf.cast(), n) }),
    })
}

/// The packed bytes of `count` elements of `datatype`.
fn packed_len(count: c_int, datatype: Handle) -> Result<usize, Fail> {
    let map = derived::committed(datatype)?;
    let n = usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))?;
    derived::bytes_of(&map, n)
}

/// The root's block sizes in packed bytes (from its counts of
/// `datatype`), broadcast to every rank.
///
/// # Safety
/// At the root, `counts` valid for `n` ints.
unsafe fn root_counts(
    c: &CommEntry,
    root: u32,
    counts: *const c_int,
    datatype: Handle,
) -> Result<Vec<usize>, Fail> {
    let n = c.size() as usize;
    let mut all = vec![0u64; n];
    if c.rank == root {
        let size = derived::committed(datatype)?.size as u64;
        // SAFETY: as this function's contract.
        let counts = unsafe { ptr::slice(counts, n, "counts") }?;
        for (a, &k) in all.iter_mut().zip(counts) {
            *a = u64::try_from(k).map_err(|_| Fail::new(err::COUNT, format!("count {k}")))? * size;
        }
    }
    c.lock().bcast(root, &mut all)?;
    Ok(all.into_iter().map(|b| b as usize).collect())
}

/// The blocks of a rooted `v` call on `c`: at the root, its counts and
/// displacements of `datatype`; elsewhere the root's block sizes alone.
///
/// # Safety
/// At the root, `counts` and `displs` valid for the group's size.
unsafe fn rooted(
    c: &CommEntry,
    root: u32,
    (counts, displs): (*const c_int, *const c_int),
    datatype: Handle,
) -> Result<Layout, Fail> {
    // SAFETY: as this function's contract.
    let sizes = unsafe { root_counts(c, root, counts, datatype) }?;
    match c.rank == root {
        // SAFETY: as this function's contract.
        true => unsafe { Layout::read(sizes.len(), counts, displs, datatype) },
        false => Ok(Layout::sized(sizes)),
    }
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
            let layout = unsafe { rooted(&c, root, (recvcounts, displs), recvtype) }?;
            let mine = layout.counts[c.rank as usize];
            let input: Cow<[u8]> = match crate::coll::in_place(sendbuf) {
                // SAFETY: the root's buffer holds its blocks (the call's contract).
                true if at_root => Cow::Owned(unsafe { layout.block(recvbuf.cast(), c.rank as usize) }?),
                true => return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root")),
                false => {
                    // SAFETY: sendcount elements at sendbuf (the call's contract).
                    let bytes = unsafe { packed(sendbuf, sendcount, sendtype, "sendbuf") }?;
                    if bytes.len() != mine {
                        return Err(Fail::new(err::TRUNCATE, format!("{} bytes sent to a block of {mine}", bytes.len())));
                    }
                    bytes
                }
            };
            let mut gathered = vec![0u8; if at_root { layout.total() } else { 0 }];
            c.lock().gatherv(root, &input, &mut gathered, &layout.counts)?;
            if at_root {
                // SAFETY: the root's buffer holds its blocks (the call's contract).
                unsafe { layout.unpack(&gathered, recvbuf.cast()) }?;
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
            let layout = unsafe { rooted(&c, root, (sendcounts, displs), sendtype) }?;
            let mine = layout.counts[c.rank as usize];
            let input = match at_root {
                // SAFETY: the root's buffer holds its blocks (the call's contract).
                true => unsafe { layout.pack(sendbuf.cast()) }?,
                false => Vec::new(),
            };
            let in_place = crate::coll::in_place(recvbuf);
            if in_place && !at_root {
                return Err(Fail::new(err::BUFFER, "MPI_IN_PLACE off the root"));
            }
            if !in_place {
                let bytes = packed_len(recvcount, recvtype)?;
                if bytes != mine {
                    return Err(Fail::new(err::TRUNCATE, format!("a block of {mine} bytes into {bytes}")));
                }
            }
            let mut own = vec![0u8; mine];
            c.lock().scatterv(root, &input, &mut own, &layout.counts)?;
            if !in_place {
                let map = derived::committed(recvtype)?;
                let n = usize::try_from(recvcount).unwrap_or(0);
                // SAFETY: recvcount elements at recvbuf (the call's contract).
                unsafe { derived::unpack(&map, &own, recvbuf.cast(), n) };
            }
            Ok(())
        });
        finish("MPI_Scatterv", comm, result)
    }
}

/// An allgatherv's receive blocks and this rank's block, packed.
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
    let input = match crate::coll::in_place(sendbuf) {
        // SAFETY: the buffer holds the blocks (the call's contract).
        true => unsafe { layout.block(recvbuf.cast(), c.rank as usize) }?,
        // SAFETY: sendcount elements at sendbuf (the call's contract).
        false => unsafe { packed(sendbuf, sendcount, sendtype, "sendbuf") }?.into_owned(),
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
            match layout.packed_span() {
                Some(span) => {
                    // SAFETY: the blocks lie one after the other from recvbuf (the call's contract).
                    let out = unsafe { ptr::slice_mut(recvbuf.cast::<u8>(), span, "recvbuf") }?;
                    c.lock().allgatherv(&input, out, &layout.counts)?;
                }
                None => {
                    let mut gathered = vec![0u8; layout.total()];
                    c.lock().allgatherv(&input, &mut gathered, &layout.counts)?;
                    // SAFETY: the buffer holds the blocks (the call's contract).
                    unsafe { layout.unpack(&gathered, recvbuf.cast()) }?;
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
) -> Result<(Vec<usize>, Vec<u8>, Layout), Fail> {
    let n = c.size() as usize;
    // SAFETY: n counts and displacements (the call's contract).
    let recv = unsafe { Layout::read(n, recvcounts, rdispls, recvtype) }?;
    let (send, input) = match crate::coll::in_place(sendbuf) {
        // SAFETY: the buffer holds the blocks (the call's contract).
        true => (recv.counts.clone(), unsafe { recv.pack(recvbuf.cast()) }?),
        false => {
            // SAFETY: n counts and displacements (the call's contract).
            let send = unsafe { Layout::read(n, sendcounts, sdispls, sendtype) }?;
            // SAFETY: the buffer holds the blocks (the call's contract).
            let input = unsafe { send.pack(sendbuf.cast()) }?;
            (send.counts, input)
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
            let mut exchanged = vec![0u8; recv.total()];
            c.lock().alltoallv(&input, &send, &mut exchanged, &recv.counts)?;
            // SAFETY: the buffer holds the blocks (the call's contract).
            unsafe { recv.unpack(&exchanged, recvbuf.cast()) }
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
            let run = c.lock().ialltoallv(input, &send, output, &recv.counts)?;
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
    use crate::datatype::Element;

    fn bytes_layout(counts: &[usize], displs: &[isize]) -> Layout {
        let map = Arc::new(TypeMap::predefined(1, Element::U8));
        Layout {
            counts: counts.to_vec(),
            place: Some(Placement {
                map,
                elements: counts.to_vec(),
                displs: displs.to_vec(),
            }),
        }
    }

    #[test]
    fn blocks_pack_and_unpack_by_their_displacements() {
        let layout = bytes_layout(&[2, 0, 3], &[4, 0, 0]);
        assert_eq!(layout.packed_span(), None);
        let buffer = [10u8, 11, 12, 13, 14, 15];
        // SAFETY: the blocks lie in `buffer`.
        assert_eq!(
            unsafe { layout.pack(buffer.as_ptr()) }.unwrap(),
            vec![14, 15, 10, 11, 12]
        );
        let mut back = [0u8; 6];
        // SAFETY: as above.
        unsafe { layout.unpack(&[1, 2, 3, 4, 5], back.as_mut_ptr()) }.unwrap();
        assert_eq!(back, [3, 4, 5, 0, 1, 2]);
        assert_eq!(bytes_layout(&[1, 2], &[0, 1]).packed_span(), Some(3));
        assert!(Layout::sized(vec![4, 4]).placement().is_err());
    }
}
