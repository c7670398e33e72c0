//! `MPI_Pack`, `MPI_Unpack` and `MPI_Pack_size`: a datatype's data as
//! the bytes of its type map one after the other, at a position of a
//! buffer the program keeps. It is the form point-to-point sends a
//! non-contiguous datatype in, so `MPI_PACKED` data sent from one side
//! is received by the datatype on the other, and back.

use std::ffi::{c_int, c_void};

use crate::abi::{err, Handle};
use crate::errors::{finish, Fail};
use crate::{datatype, derived, mpi, ptr, runtime};

/// Where `len` bytes go at the position `position` points to, in a
/// buffer of `size` bytes: that position and the next one.
///
/// # Safety
/// `position` is valid for an int.
unsafe fn span(position: *const c_int, len: usize, size: c_int) -> Result<(usize, c_int), Fail> {
    // SAFETY: as this function's contract.
    let at = unsafe { ptr::read(position, "position") }?;
    let (Ok(start), Ok(size)) = (usize::try_from(at), usize::try_from(size)) else {
        return Err(Fail::new(
            err::ARG,
            format!("position {at} in a buffer of {size} bytes"),
        ));
    };
    match start.checked_add(len).filter(|&end| end <= size) {
        Some(end) => Ok((start, end as c_int)),
        None => Err(Fail::new(
            err::TRUNCATE,
            format!("{len} bytes at position {start} of a buffer of {size}"),
        )),
    }
}

mpi! {
    /// Packs `incount` elements of `datatype` at `inbuf` into `outbuf`
    /// at `*position`, which moves past them.
    fn MPI_Pack / PMPI_Pack(
        inbuf: *const c_void,
        incount: c_int,
        datatype: Handle,
        outbuf: *mut c_void,
        outsize: c_int,
        position: *mut c_int,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|_| {
            let map = derived::committed(datatype)?;
            let len = datatype::times(incount, map.size)?;
            // SAFETY: as the call's contract.
            let (start, end) = unsafe { span(position, len, outsize) }?;
            // SAFETY: incount elements at inbuf (the call's contract).
            let data = unsafe { derived::pack(&map, inbuf.cast(), incount as usize) };
            let at = outbuf.cast::<u8>().wrapping_add(start);
            // SAFETY: outsize bytes at outbuf (the call's contract), of
            // which these lie within.
            let out = unsafe { ptr::slice_mut(at, len, "outbuf") }?;
            out.copy_from_slice(&data);
            // SAFETY: as the call's contract.
            unsafe { ptr::write(position, end, "position") }
        });
        finish("MPI_Pack", comm, result)
    }
}

mpi! {
    /// Unpacks `outcount` elements of `datatype` into `outbuf` from
    /// `inbuf` at `*position`, which moves past them.
    fn MPI_Unpack / PMPI_Unpack(
        inbuf: *const c_void,
        insize: c_int,
        position: *mut c_int,
        outbuf: *mut c_void,
        outcount: c_int,
        datatype: Handle,
        comm: Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|_| {
            let map = derived::committed(datatype)?;
            let len = datatype::times(outcount, map.size)?;
            // SAFETY: as the call's contract.
            let (start, end) = unsafe { span(position, len, insize) }?;
            let at = inbuf.cast::<u8>().wrapping_add(start);
            // SAFETY: insize bytes at inbuf (the call's contract), of
            // which these lie within.
            let data = unsafe { ptr::slice(at, len, "inbuf") }?;
            // SAFETY: outcount elements at outbuf (the call's contract).
            unsafe { derived::unpack(&map, data, outbuf.cast(), outcount as usize) };
            // SAFETY: as the call's contract.
            unsafe { ptr::write(position, end, "position") }
        });
        finish("MPI_Unpack", comm, result)
    }
}

mpi! {
    /// The bytes `MPI_Pack` of `incount` elements of `datatype` takes
    /// (exactly: the packed form has no header).
    fn MPI_Pack_size / PMPI_Pack_size(incount: c_int, datatype: Handle, comm: Handle, size: *mut c_int) -> c_int {
        let result = runtime::comm(comm).and_then(|_| {
            let len = datatype::times(incount, datatype::size_of(datatype)?)?;
            let len = c_int::try_from(len)
                .map_err(|_| Fail::new(err::COUNT, format!("{len} bytes do not fit an int")))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, len, "size") }
        });
        finish("MPI_Pack_size", comm, result)
    }
}
