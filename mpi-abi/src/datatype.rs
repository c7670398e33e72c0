//! Predefined datatypes: their sizes, and the Rust element type a
//! reduction on them combines; the sizes and extents of every datatype
//! (derived ones: `derived.rs`).

use std::ffi::c_int;

use crate::abi::{self, datatype as dt, err, Aint, Count, Handle};
use crate::errors::{finish, Fail};
use crate::{derived, mpi, ptr};

/// The element a reduction combines, by its Rust type; `Bytes` for the
/// types only moved (pairs, complex, long double).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Element {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    /// The pairs of `MPI_MINLOC` and `MPI_MAXLOC` ([`crate::op`]).
    FloatInt,
    DoubleInt,
    LongInt,
    TwoInt,
    ShortInt,
    TwoReal,
    TwoDouble,
    Bytes,
}

/// Runs `$body` with the type `$t` naming the Rust type of `$element`,
/// or `$bytes` for the types only moved or not numbers.
macro_rules! by_element {
    ($element:expr, $t:ident => $body:expr, $bytes:expr) => {
        match $element {
            $crate::datatype::Element::I8 => {
                type $t = i8;
                $body
            }
            $crate::datatype::Element::U8 => {
                type $t = u8;
                $body
            }
            $crate::datatype::Element::I16 => {
                type $t = i16;
                $body
            }
            $crate::datatype::Element::U16 => {
                type $t = u16;
                $body
            }
            $crate::datatype::Element::I32 => {
                type $t = i32;
                $body
            }
            $crate::datatype::Element::U32 => {
                type $t = u32;
                $body
            }
            $crate::datatype::Element::I64 => {
                type $t = i64;
                $body
            }
            $crate::datatype::Element::U64 => {
                type $t = u64;
                $body
            }
            $crate::datatype::Element::F32 => {
                type $t = f32;
                $body
            }
            $crate::datatype::Element::F64 => {
                type $t = f64;
                $body
            }
            _ => $bytes,
        }
    };
}
pub(crate) use by_element;

/// As [`by_element`], the pair types of the location operations too
/// (reductions; atomics take numbers only).
macro_rules! by_reducible {
    ($element:expr, $t:ident => $body:expr, $bytes:expr) => {
        match $element {
            $crate::datatype::Element::FloatInt => {
                type $t = $crate::op::FloatInt;
                $body
            }
            $crate::datatype::Element::DoubleInt => {
                type $t = $crate::op::DoubleInt;
                $body
            }
            $crate::datatype::Element::LongInt => {
                type $t = $crate::op::LongInt;
                $body
            }
            $crate::datatype::Element::TwoInt => {
                type $t = $crate::op::TwoInt;
                $body
            }
            $crate::datatype::Element::ShortInt => {
                type $t = $crate::op::ShortInt;
                $body
            }
            $crate::datatype::Element::TwoReal => {
                type $t = $crate::op::TwoReal;
                $body
            }
            $crate::datatype::Element::TwoDouble => {
                type $t = $crate::op::TwoDouble;
                $body
            }
            other => $crate::datatype::by_element!(other, $t => $body, $bytes),
        }
    };
}
pub(crate) use by_reducible;

/// A predefined datatype: its size in bytes and element.
pub(crate) fn predefined(handle: Handle) -> Option<(usize, Element)> {
    use Element::*;
    Some(match handle {
        dt::CHAR | dt::SIGNED_CHAR | dt::INT8_T => (1, I8),
        dt::UNSIGNED_CHAR
        | dt::UINT8_T
        | dt::BYTE
        | dt::PACKED
        | dt::C_BOOL
        | dt::CXX_BOOL
        | dt::CHARACTER => (1, U8),
        dt::SHORT | dt::INT16_T => (2, I16),
        dt::UNSIGNED_SHORT | dt::UINT16_T => (2, U16),
        dt::INT | dt::INT32_T | dt::WCHAR | dt::INTEGER | dt::LOGICAL => (4, I32),
        dt::UNSIGNED | dt::UINT32_T => (4, U32),
        dt::LONG | dt::LONG_LONG | dt::INT64_T | dt::AINT | dt::COUNT | dt::OFFSET => (8, I64),
        dt::UNSIGNED_LONG | dt::UNSIGNED_LONG_LONG | dt::UINT64_T => (8, U64),
        dt::FLOAT | dt::REAL => (4, F32),
        dt::DOUBLE | dt::DOUBLE_PRECISION => (8, F64),
        dt::C_FLOAT_COMPLEX | dt::CXX_FLOAT_COMPLEX | dt::COMPLEX => (8, Bytes),
        dt::C_DOUBLE_COMPLEX | dt::CXX_DOUBLE_COMPLEX | dt::DOUBLE_COMPLEX => (16, Bytes),
        dt::LONG_DOUBLE => (16, Bytes),
        dt::C_LONG_DOUBLE_COMPLEX | dt::CXX_LONG_DOUBLE_COMPLEX => (32, Bytes),
        dt::FLOAT_INT => (8, FloatInt),
        dt::TWO_INT | dt::TWO_INTEGER => (8, TwoInt),
        dt::SHORT_INT => (8, ShortInt),
        dt::TWO_REAL => (8, TwoReal),
        dt::DOUBLE_INT => (16, DoubleInt),
        dt::LONG_INT => (16, LongInt),
        dt::TWO_DOUBLE_PRECISION => (16, TwoDouble),
        dt::LONG_DOUBLE_INT => (32, Bytes),
        _ => return None,
    })
}

/// The name of predefined datatype `handle` (`MPI_Type_get_name`).
pub(crate) fn predefined_name(handle: Handle) -> Option<&'static str> {
    Some(match handle {
        dt::AINT => "MPI_AINT",
        dt::COUNT => "MPI_COUNT",
        dt::OFFSET => "MPI_OFFSET",
        dt::PACKED => "MPI_PACKED",
        dt::SHORT => "MPI_SHORT",
        dt::INT => "MPI_INT",
        dt::LONG => "MPI_LONG",
        dt::LONG_LONG => "MPI_LONG_LONG",
        dt::UNSIGNED_SHORT => "MPI_UNSIGNED_SHORT",
        dt::UNSIGNED => "MPI_UNSIGNED",
        dt::UNSIGNED_LONG => "MPI_UNSIGNED_LONG",
        dt::UNSIGNED_LONG_LONG => "MPI_UNSIGNED_LONG_LONG",
        dt::FLOAT => "MPI_FLOAT",
        dt::C_FLOAT_COMPLEX => "MPI_C_FLOAT_COMPLEX",
        dt::CXX_FLOAT_COMPLEX => "MPI_CXX_FLOAT_COMPLEX",
        dt::DOUBLE => "MPI_DOUBLE",
        dt::C_DOUBLE_COMPLEX => "MPI_C_DOUBLE_COMPLEX",
        dt::CXX_DOUBLE_COMPLEX => "MPI_CXX_DOUBLE_COMPLEX",
        dt::LOGICAL => "MPI_LOGICAL",
        dt::INTEGER => "MPI_INTEGER",
        dt::REAL => "MPI_REAL",
        dt::COMPLEX => "MPI_COMPLEX",
        dt::DOUBLE_PRECISION => "MPI_DOUBLE_PRECISION",
        dt::DOUBLE_COMPLEX => "MPI_DOUBLE_COMPLEX",
        dt::CHARACTER => "MPI_CHARACTER",
        dt::LONG_DOUBLE => "MPI_LONG_DOUBLE",
        dt::C_LONG_DOUBLE_COMPLEX => "MPI_C_LONG_DOUBLE_COMPLEX",
        dt::CXX_LONG_DOUBLE_COMPLEX => "MPI_CXX_LONG_DOUBLE_COMPLEX",
        dt::FLOAT_INT => "MPI_FLOAT_INT",
        dt::DOUBLE_INT => "MPI_DOUBLE_INT",
        dt::LONG_INT => "MPI_LONG_INT",
        dt::TWO_INT => "MPI_2INT",
        dt::SHORT_INT => "MPI_SHORT_INT",
        dt::LONG_DOUBLE_INT => "MPI_LONG_DOUBLE_INT",
        dt::TWO_REAL => "MPI_2REAL",
        dt::TWO_DOUBLE_PRECISION => "MPI_2DOUBLE_PRECISION",
        dt::TWO_INTEGER => "MPI_2INTEGER",
        dt::C_BOOL => "MPI_C_BOOL",
        dt::CXX_BOOL => "MPI_CXX_BOOL",
        dt::WCHAR => "MPI_WCHAR",
        dt::INT8_T => "MPI_INT8_T",
        dt::UINT8_T => "MPI_UINT8_T",
        dt::CHAR => "MPI_CHAR",
        dt::SIGNED_CHAR => "MPI_SIGNED_CHAR",
        dt::UNSIGNED_CHAR => "MPI_UNSIGNED_CHAR",
        dt::BYTE => "MPI_BYTE",
        dt::INT16_T => "MPI_INT16_T",
        dt::UINT16_T => "MPI_UINT16_T",
        dt::INT32_T => "MPI_INT32_T",
        dt::UINT32_T => "MPI_UINT32_T",
        dt::INT64_T => "MPI_INT64_T",
        dt::UINT64_T => "MPI_UINT64_T",
        _ => return None,
    })
}

/// Predefined datatype `handle`'s size and element (what reductions
/// take: MPI defines its predefined operations on predefined datatypes
/// only, and onesided's reductions take the program's operations on them
/// too).
///
/// # Errors
/// `MPI_ERR_TYPE` for an invalid or null datatype; `MPI_ERR_OP` for one
/// of the program's.
pub(crate) fn of(handle: Handle) -> Result<(usize, Element), Fail> {
    predefined(handle).ok_or_else(|| match derived::derived(handle) {
        Ok(_) => Fail::new(
            err::OP,
            format!("a reduction on derived datatype {handle:#x} (predefined ones only)"),
        ),
        Err(e) => e,
    })
}

/// What an accumulate combines for datatype `handle`: the predefined
/// elements in one of it, their size and kind. A derived datatype must
/// be committed, contiguous, and of one predefined element (MPI allows
/// no other in an accumulate with a predefined operation).
///
/// # Errors
/// `MPI_ERR_TYPE` for another datatype.
pub(crate) fn reducible(handle: Handle) -> Result<(usize, usize, Element), Fail> {
    if let Some((size, element)) = predefined(handle) {
        return Ok((1, size, element));
    }
    let map = derived::committed(handle)?;
    match (map.is_dense(), map.element) {
        (true, Some((element, size))) => Ok((map.elements, size, element)),
        _ => Err(Fail::new(
            err::TYPE,
            format!("datatype {handle:#x} in an accumulate (contiguous copies of one predefined type only)"),
        )),
    }
}

/// The size of datatype `handle`, predefined or the program's.
///
/// # Errors
/// `MPI_ERR_TYPE` for an invalid datatype.
pub(crate) fn size_of(handle: Handle) -> Result<usize, Fail> {
    match predefined(handle) {
        Some((size, _)) => Ok(size),
        None => Ok(derived::derived(handle)?.map.size),
    }
}

/// The bytes of `count` elements of `handle`, which lie one after the
/// other (a predefined datatype, or a committed one of the program's
/// that is copies of one without gaps).
///
/// # Errors
/// `MPI_ERR_COUNT` for a negative count, `MPI_ERR_TYPE` for an invalid,
/// uncommitted or non-contiguous datatype.
pub(crate) fn bytes(count: c_int, handle: Handle) -> Result<usize, Fail> {
    match dense_size(handle)? {
        Some(size) => times(count, size),
        None => Err(Fail::new(
            err::TYPE,
            format!("non-contiguous datatype {handle:#x} here (point-to-point only)"),
        )),
    }
}

/// The size of datatype `handle` when its bytes lie one after the other
/// (a predefined datatype, or a committed one of the program's without
/// gaps); `None` when it has gaps.
///
/// # Errors
/// `MPI_ERR_TYPE` for an invalid or uncommitted datatype.
pub(crate) fn dense_size(handle: Handle) -> Result<Option<usize>, Fail> {
    match predefined(handle) {
        Some((size, _)) => Ok(Some(size)),
        None => {
            let map = derived::committed(handle)?;
            Ok(map.is_dense().then_some(map.size))
        }
    }
}

/// The bytes of `count` elements of `size` bytes.
///
/// # Errors
/// `MPI_ERR_COUNT` for a negative count or one whose bytes no address
/// holds.
pub(crate) fn times(count: c_int, size: usize) -> Result<usize, Fail> {
    usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .ok_or_else(|| Fail::new(err::COUNT, format!("count {count}")))
}

mpi! {
    /// The size of a datatype in bytes.
    fn MPI_Type_size / PMPI_Type_size(datatype: Handle, size: *mut c_int) -> c_int {
        let result = size_of(datatype).and_then(|bytes| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, bytes as c_int, "size") }
        });
        finish("MPI_Type_size", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The size of a datatype in bytes, as an `MPI_Count`.
    fn MPI_Type_size_c / PMPI_Type_size_c(datatype: Handle, size: *mut Count) -> c_int {
        let result = size_of(datatype).and_then(|bytes| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, bytes as Count, "size") }
        });
        finish("MPI_Type_size_c", abi::comm::WORLD, result)
    }
}

/// Writes a lower bound and an extent.
///
/// # Safety
/// Both pointers null or valid.
unsafe fn bounds(lb: *mut Aint, extent: *mut Aint, (l, e): (isize, isize)) -> Result<(), Fail> {
    // SAFETY: as this function's contract.
    unsafe { ptr::write(lb, l, "lb") }?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(extent, e, "extent") }
}

mpi! {
    /// A datatype's lower bound and extent.
    fn MPI_Type_get_extent / PMPI_Type_get_extent(
        datatype: Handle,
        lb: *mut Aint,
        extent: *mut Aint,
    ) -> c_int {
        let result = derived::map_of(datatype).and_then(|m| {
            // SAFETY: as the call's contract.
            unsafe { bounds(lb, extent, (m.lb, m.extent())) }
        });
        finish("MPI_Type_get_extent", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The bounds of a datatype's data (what its lower bound and extent
    /// leave out or add).
    fn MPI_Type_get_true_extent / PMPI_Type_get_true_extent(
        datatype: Handle,
        lb: *mut Aint,
        extent: *mut Aint,
    ) -> c_int {
        let result = derived::map_of(datatype).and_then(|m| {
            // SAFETY: as the call's contract.
            unsafe { bounds(lb, extent, (m.true_lb, m.true_ub - m.true_lb)) }
        });
        finish("MPI_Type_get_true_extent", abi::comm::WORLD, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_c_types_of_lp64() {
        assert_eq!(predefined(dt::INT), Some((4, Element::I32)));
        assert_eq!(predefined(dt::LONG), Some((8, Element::I64)));
        assert_eq!(predefined(dt::DOUBLE_INT), Some((16, Element::DoubleInt)));
        assert_eq!(predefined(dt::LONG_DOUBLE_INT), Some((32, Element::Bytes)));
        assert_eq!(predefined(dt::NULL), None);
        assert_eq!(bytes(3, dt::DOUBLE), Ok(24));
        assert_eq!(bytes(-1, dt::DOUBLE).map_err(|f| f.class), Err(err::COUNT));
    }
}
