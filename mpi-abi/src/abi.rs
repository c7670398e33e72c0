//! The standard ABI's types and constants (MPI 5.0, ABI version 1.0):
//! what C programs built against `mpi_abi.h` pass and expect. Handles
//! are pointer-sized; the predefined ones have fixed small values.

use std::ffi::c_int;

/// A handle of any kind (`MPI_Comm`, `MPI_Datatype`, ...): pointer-sized.
pub type Handle = usize;
/// `MPI_Aint`: an address-sized integer.
pub type Aint = isize;
/// `MPI_Count`: 64 bits.
pub type Count = i64;

/// `MPI_Status`: source, tag, error, and five words of the
/// implementation's (here: the received bytes, low and high halves, and
/// whether the request was cancelled).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct Status {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    /// The implementation's words.
    pub internal: [c_int; 5],
}

/// The ABI's version, `MPI_ABI_VERSION`.`MPI_ABI_SUBVERSION`.
pub const ABI_VERSION: (c_int, c_int) = (1, 0);
/// The standard's version this library implements the semantics of.
pub const VERSION: (c_int, c_int) = (5, 0);

/// Operations.
pub mod op {
    use super::Handle;
    pub const NULL: Handle = 0x20;
    pub const SUM: Handle = 0x21;
    pub const MIN: Handle = 0x22;
    pub const MAX: Handle = 0x23;
    pub const PROD: Handle = 0x24;
    pub const BAND: Handle = 0x28;
    pub const BOR: Handle = 0x29;
    pub const BXOR: Handle = 0x2a;
    pub const LAND: Handle = 0x30;
    pub const LOR: Handle = 0x31;
    pub const LXOR: Handle = 0x32;
    pub const MINLOC: Handle = 0x38;
    pub const MAXLOC: Handle = 0x39;
    pub const REPLACE: Handle = 0x3c;
    pub const NO_OP: Handle = 0x3d;
}

/// Communicators.
pub mod comm {
    use super::Handle;
    pub const NULL: Handle = 0x100;
    pub const WORLD: Handle = 0x101;
    pub const SELF: Handle = 0x102;
}

/// Groups.
pub mod group {
    use super::Handle;
    pub const NULL: Handle = 0x108;
    pub const EMPTY: Handle = 0x109;
}

/// Error handlers.
pub mod errhandler {
    use super::Handle;
    pub const NULL: Handle = 0x140;
    pub const ARE_FATAL: Handle = 0x141;
    pub const ABORT: Handle = 0x142;
    pub const RETURN: Handle = 0x143;
}

/// `MPI_WIN_NULL`.
pub const WIN_NULL: Handle = 0x110;
/// `MPI_REQUEST_NULL`.
pub const REQUEST_NULL: Handle = 0x180;

/// Info objects.
pub mod info {
    use super::Handle;
    pub const NULL: Handle = 0x130;
    pub const ENV: Handle = 0x131;
}

/// Predefined datatypes: C's, the fixed-size integers, the pairs of
/// `MPI_MINLOC`/`MPI_MAXLOC` and Fortran's unsized ones (the sized Fortran
/// ones, `MPI_INTEGER4` and the like, are not known yet).
pub mod datatype {
    use super::Handle;
    pub const NULL: Handle = 0x200;
    pub const AINT: Handle = 0x201;
    pub const COUNT: Handle = 0x202;
    pub const OFFSET: Handle = 0x203;
    pub const PACKED: Handle = 0x207;
    pub const SHORT: Handle = 0x208;
    pub const INT: Handle = 0x209;
    pub const LONG: Handle = 0x20a;
    pub const LONG_LONG: Handle = 0x20b;
    pub const UNSIGNED_SHORT: Handle = 0x20c;
    pub const UNSIGNED: Handle = 0x20d;
    pub const UNSIGNED_LONG: Handle = 0x20e;
    pub const UNSIGNED_LONG_LONG: Handle = 0x20f;
    pub const FLOAT: Handle = 0x210;
    pub const C_FLOAT_COMPLEX: Handle = 0x212;
    pub const CXX_FLOAT_COMPLEX: Handle = 0x213;
    pub const DOUBLE: Handle = 0x214;
    pub const C_DOUBLE_COMPLEX: Handle = 0x216;
    pub const CXX_DOUBLE_COMPLEX: Handle = 0x217;
    pub const LOGICAL: Handle = 0x218;
    pub const INTEGER: Handle = 0x219;
    pub const REAL: Handle = 0x21a;
    pub const COMPLEX: Handle = 0x21b;
    pub const DOUBLE_PRECISION: Handle = 0x21c;
    pub const DOUBLE_COMPLEX: Handle = 0x21d;
    pub const CHARACTER: Handle = 0x21e;
    pub const LONG_DOUBLE: Handle = 0x220;
    pub const C_LONG_DOUBLE_COMPLEX: Handle = 0x224;
    pub const CXX_LONG_DOUBLE_COMPLEX: Handle = 0x225;
    pub const FLOAT_INT: Handle = 0x228;
    pub const DOUBLE_INT: Handle = 0x229;
    pub const LONG_INT: Handle = 0x22a;
    pub const TWO_INT: Handle = 0x22b;
    pub const SHORT_INT: Handle = 0x22c;
    pub const LONG_DOUBLE_INT: Handle = 0x22d;
    pub const TWO_REAL: Handle = 0x230;
    pub const TWO_DOUBLE_PRECISION: Handle = 0x231;
    pub const TWO_INTEGER: Handle = 0x232;
    pub const C_BOOL: Handle = 0x238;
    pub const CXX_BOOL: Handle = 0x239;
    pub const WCHAR: Handle = 0x23c;
    pub const INT8_T: Handle = 0x240;
    pub const UINT8_T: Handle = 0x241;
    pub const CHAR: Handle = 0x243;
    pub const SIGNED_CHAR: Handle = 0x244;
    pub const UNSIGNED_CHAR: Handle = 0x245;
    pub const BYTE: Handle = 0x247;
    pub const INT16_T: Handle = 0x248;
    pub const UINT16_T: Handle = 0x249;
    pub const INT32_T: Handle = 0x250;
    pub const UINT32_T: Handle = 0x251;
    pub const INT64_T: Handle = 0x258;
    pub const UINT64_T: Handle = 0x259;
}

/// Error classes (an error code here is its class).
pub mod err {
    use std::ffi::c_int;
    pub const SUCCESS: c_int = 0;
    pub const BUFFER: c_int = 1;
    pub const COUNT: c_int = 2;
    pub const TYPE: c_int = 3;
    pub const TAG: c_int = 4;
    pub const COMM: c_int = 5;
    pub const RANK: c_int = 6;
    pub const REQUEST: c_int = 7;
    pub const ROOT: c_int = 8;
    pub const GROUP: c_int = 9;
    pub const OP: c_int = 10;
    pub const TOPOLOGY: c_int = 11;
    pub const DIMS: c_int = 12;
    pub const ARG: c_int = 13;
    pub const UNKNOWN: c_int = 14;
    pub const TRUNCATE: c_int = 15;
    pub const OTHER: c_int = 16;
    pub const INTERN: c_int = 17;
    pub const PENDING: c_int = 18;
    pub const IN_STATUS: c_int = 19;
    pub const ACCESS: c_int = 20;
    pub const ASSERT: c_int = 22;
    pub const BASE: c_int = 24;
    pub const DISP: c_int = 26;
    pub const INFO_KEY: c_int = 31;
    pub const INFO_NOKEY: c_int = 32;
    pub const INFO_VALUE: c_int = 33;
    pub const INFO: c_int = 34;
    pub const KEYVAL: c_int = 36;
    pub const LOCKTYPE: c_int = 37;
    pub const NO_MEM: c_int = 39;
    pub const NOT_SAME: c_int = 40;
    pub const RMA_ATTACH: c_int = 46;
    pub const RMA_CONFLICT: c_int = 47;
    pub const RMA_RANGE: c_int = 48;
    pub const RMA_SHARED: c_int = 49;
    pub const RMA_SYNC: c_int = 50;
    pub const SIZE: c_int = 52;
    pub const SPAWN: c_int = 53;
    pub const UNSUPPORTED_OPERATION: c_int = 55;
    pub const WIN: c_int = 56;
    pub const RMA_FLAVOR: c_int = 57;
    pub const PROC_ABORTED: c_int = 58;
    pub const VALUE_TOO_LARGE: c_int = 59;
    pub const SESSION: c_int = 60;
    pub const ERRHANDLER: c_int = 61;
    pub const ABI: c_int = 62;
    pub const LASTCODE: c_int = 0x3fff;
}

/// `MPI_IN_PLACE`.
pub const IN_PLACE: usize = 1;

/// Rank sentinels and wildcards.
pub const ANY_SOURCE: c_int = -1;
pub const ANY_TAG: c_int = -2;
pub const PROC_NULL: c_int = -3;
pub const ROOT: c_int = -4;
pub const UNDEFINED: c_int = -32766;

/// Thread levels.
pub mod thread {
    use std::ffi::c_int;
    pub const SINGLE: c_int = 0;
    pub const FUNNELED: c_int = 1024;
    pub const SERIALIZED: c_int = 2048;
    pub const MULTIPLE: c_int = 4096;
}

/// Comparisons of communicators and groups.
pub mod compare {
    use std::ffi::c_int;
    pub const IDENT: c_int = 201;
    pub const CONGRUENT: c_int = 202;
    pub const SIMILAR: c_int = 203;
    pub const UNEQUAL: c_int = 204;
}

/// `MPI_COMM_TYPE_SHARED`.
pub const COMM_TYPE_SHARED: c_int = 221;

/// Predefined attribute keys of communicators.
pub mod key {
    use std::ffi::c_int;
    pub const TAG_UB: c_int = 501;
    pub const IO: c_int = 502;
    pub const HOST: c_int = 503;
    pub const WTIME_IS_GLOBAL: c_int = 504;
    pub const APPNUM: c_int = 505;
    pub const LASTUSEDCODE: c_int = 506;
    pub const UNIVERSE_SIZE: c_int = 507;
}

/// String lengths.
pub const MAX_ERROR_STRING: usize = 512;
pub const MAX_LIBRARY_VERSION_STRING: usize = 8192;
pub const MAX_PROCESSOR_NAME: usize = 256;
pub const MAX_OBJECT_NAME: usize = 128;
