//! Non-contiguous datatypes in the collectives that move data (`Bcast`,
//! `Gather`, `Scatter`, `Allgather`, `Alltoall`): a buffer of such a
//! datatype is staged as packed bytes (read ones packed, written ones
//! unpacked after the call succeeded), and the call runs again on the
//! packed bytes as `MPI_BYTE`: one copy each way, as MPICH's packing.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use crate::abi::{self, err, Handle};
use crate::coll::in_place;
use crate::datatype;
use crate::derived;
use crate::errors::Fail;
use crate::typemap::TypeMap;

/// A buffer of a non-contiguous datatype, as packed bytes.
pub(crate) struct Staged {
    buf: *mut c_void,
    map: Arc<TypeMap>,
    count: usize,
    packed: Vec<u8>,
}

/// Whether `datatype` needs staging: committed, and not contiguous.
fn scattered(datatype: Handle) -> Result<Option<Arc<TypeMap>>, Fail> {
    if datatype::predefined(datatype).is_some() {
        return Ok(None);
    }
    let map = derived::committed(datatype)?;
    Ok((!map.is_dense()).then_some(map))
}

/// Whether any of `datatypes` needs staging (invalid ones do not: the
/// call reports them).
pub(crate) fn any_scattered(datatypes: &[Handle]) -> bool {
    datatypes
        .iter()
        .any(|&d| matches!(scattered(d), Ok(Some(_))))
}

impl Staged {
    /// `count` elements of `datatype` at `buf`: `None` when the datatype
    /// is contiguous or `buf` is `MPI_IN_PLACE`; packed when `read` (the
    /// call reads them), else zero.
    ///
    /// # Safety
    /// When `read`, the elements are valid for reads.
    pub(crate) unsafe fn new(
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        read: bool,
    ) -> Result<Option<Staged>, Fail> {
        let Some(map) = scattered(datatype)? else {
            return Ok(None);
        };
        if in_place(buf) {
            return Ok(None);
        }
        let n =
            usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))?;
        let packed = match read {
            // SAFETY: as this function's contract.
            true => unsafe { derived::pack(&map, buf.cast(), n) },
            false => vec![0u8; map.size.saturating_mul(n)],
        };
        Ok(Some(Staged {
            buf: buf.cast_mut(),
            map,
            count: n,
            packed,
        }))
    }

    /// The packed bytes' address, for the call.
    pub(crate) fn ptr(&mut self) -> *mut c_void {
        self.packed.as_mut_ptr().cast()
    }

    /// Puts the packed bytes back into the program's buffer.
    ///
    /// # Safety
    /// The buffer's elements are valid for writes.
    pub(crate) unsafe fn unpack(self) {
        // SAFETY: as this function's contract.
        unsafe { derived::unpack(&self.map, &self.packed, self.buf.cast(), self.count) };
    }
}

/// A buffer argument of a collective.
#[derive(Clone, Copy)]
pub(crate) struct Arg {
    pub buf: *const c_void,
    /// Elements per block, as the call gives it.
    pub count: c_int,
    pub datatype: Handle,
    /// Blocks in the buffer (one per rank for a gather's receive buffer).
    pub blocks: usize,
    /// Whether the call reads it, writes it, and whether it is
    /// significant here at all (a gather's receive buffer off the root is
    /// not, nor its datatype).
    pub read: bool,
    pub written: bool,
    pub used: bool,
}

/// Runs `call` with each of `args` that has a non-contiguous datatype
/// staged (as `(pointer, count, datatype)` of `MPI_BYTE`), and unpacks the
/// written ones when it succeeds; the call's code.
///
/// # Safety
/// Each used argument's buffer is valid for its blocks, as the MPI call's
/// contract.
pub(crate) unsafe fn run<const N: usize>(
    name: &str,
    comm: Handle,
    args: [Arg; N],
    call: impl FnOnce([(*mut c_void, c_int, Handle); N]) -> c_int,
) -> c_int {
    let mut staged: [Option<Staged>; N] = std::array::from_fn(|_| None);
    let mut passed = [(std::ptr::null_mut(), 0, 0); N];
    for (i, a) in args.iter().enumerate() {
        passed[i] = (a.buf.cast_mut(), a.count, a.datatype);
        if !a.used {
            continue;
        }
        let total = match c_int::try_from(a.blocks)
            .ok()
            .and_then(|b| a.count.checked_mul(b))
        {
            Some(t) => t,
            None => {
                return crate::errors::finish(
                    name,
                    comm,
                    Err(Fail::new(err::COUNT, format!("count {}", a.count))),
                )
            }
        };
        // SAFETY: as this function's contract.
        match unsafe { Staged::new(a.buf, total, a.datatype, a.read) } {
            Ok(Some(mut s)) => {
                let per_block = s.packed.len() / a.blocks.max(1);
                let Ok(count) = c_int::try_from(per_block) else {
                    return crate::errors::finish(
                        name,
                        comm,
                        Err(Fail::new(err::COUNT, "over 2 GiB packed")),
                    );
                };
                passed[i] = (s.ptr(), count, abi::datatype::BYTE);
                staged[i] = Some(s);
            }
            Ok(None) => {}
            Err(e) => return crate::errors::finish(name, comm, Err(e)),
        }
    }
    let code = call(passed);
    if code == err::SUCCESS {
        for (s, a) in staged.into_iter().zip(&args) {
            if let (Some(s), true) = (s, a.written) {
                // SAFETY: as this function's contract.
                unsafe { s.unpack() };
            }
        }
    }
    code
}
