//! Reading and writing through the raw pointers C passes. Each helper
//! checks for null and states what the caller guarantees beyond it (the
//! MPI standard's rules: a buffer of `count` elements is valid for them).

use std::ffi::{c_char, c_int};

use crate::abi::err;
use crate::errors::Fail;

/// Writes `value` where `out` points.
///
/// # Errors
/// `MPI_ERR_ARG` naming `what` when `out` is null.
///
/// # Safety
/// `out` is null or valid and aligned for a write of `T`.
pub(crate) unsafe fn write<T>(out: *mut T, value: T, what: &str) -> Result<(), Fail> {
    if out.is_null() {
        return Err(Fail::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: not null; valid and aligned for T by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Reads what `from` points to.
///
/// # Errors
/// `MPI_ERR_ARG` naming `what` when `from` is null.
///
/// # Safety
/// `from` is null or valid and aligned for a read of `T`.
pub(crate) unsafe fn read<T: Copy>(from: *const T, what: &str) -> Result<T, Fail> {
    if from.is_null() {
        return Err(Fail::new(err::ARG, format!("{what} is NULL")));
    }
    // SAFETY: not null; valid and aligned for T by the caller's contract.
    Ok(unsafe { from.read() })
}

/// `len` elements at `p`, read.
///
/// # Errors
/// `MPI_ERR_BUFFER` naming `what` when `p` is null and `len` is not 0.
///
/// # Safety
/// `p` is null or valid for reads of `len` elements of `T`, aligned, and
/// nothing writes them while the slice lives.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, what: &str) -> Result<&'a [T], Fail> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(err::BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: not null; valid for len elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// `len` elements at `p`, to write.
///
/// # Errors
/// As [`slice`].
///
/// # Safety
/// `p` is null or valid for reads and writes of `len` elements of `T`,
/// aligned, and nothing else reaches them while the slice lives.
pub(crate) unsafe fn slice_mut<'a, T>(
    p: *mut T,
    len: usize,
    what: &str,
) -> Result<&'a mut [T], Fail> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(err::BUFFER, format!("{what} is NULL")));
    }
    // SAFETY: not null; valid for len elements by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// An object's name (`MPI_Comm_set_name`, `MPI_Win_set_name`): the
/// string at `name`, at most `MPI_MAX_OBJECT_NAME - 1` characters of it.
///
/// # Errors
/// `MPI_ERR_ARG` when `name` is null.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
pub(crate) unsafe fn read_name(name: *const c_char) -> Result<String, Fail> {
    if name.is_null() {
        return Err(Fail::new(err::ARG, "the name is NULL"));
    }
    // SAFETY: a NUL-terminated string (this function's contract).
    let text = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    Ok(text.chars().take(crate::abi::MAX_OBJECT_NAME - 1).collect())
}

/// Copies `text` into `buf` (at most `max - 1` bytes, then a NUL) and
/// its length into `len`.
///
/// # Errors
/// `MPI_ERR_ARG` when `buf` or `len` is null.
///
/// # Safety
/// `buf` is null or valid for `max` bytes; `len` null or valid for an
/// `int`.
pub(crate) unsafe fn write_text(
    buf: *mut c_char,
    len: *mut c_int,
    text: &str,
    max: usize,
) -> Result<(), Fail> {
    let bytes = &text.as_bytes()[..text.len().min(max.saturating_sub(1))];
    // SAFETY: as this function's contract.
    let out = unsafe { slice_mut(buf.cast::<u8>(), bytes.len() + 1, "the string") }?;
    out[..bytes.len()].copy_from_slice(bytes);
    out[bytes.len()] = 0;
    // SAFETY: as this function's contract.
    unsafe { write(len, bytes.len() as c_int, "resultlen") }
}
