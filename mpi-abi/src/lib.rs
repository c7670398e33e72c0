//! onesided-mpi-abi: the MPI-5 standard ABI over onesided. It builds
//! `libmpi_abi.so` with the SONAME `libmpi_abi.so.1` (and leaves
//! `libmpi_abi.so.1` beside it), so a program built once against the
//! standard ABI (MPICH's `mpicc_abi`) runs on onesided unchanged when the
//! dynamic linker finds this library first (`LD_LIBRARY_PATH`), and on
//! MPICH's with the same binary: the two can be compared on one binary.
//!
//! - Handles and constants have the standard ABI's values ([`abi`]):
//!   predefined handles are the small integers the standard fixes; a
//!   handle this library makes (a duplicated communicator, an error
//!   handler) is an index into a table of its kind, above them
//!   (`table.rs`).
//! - Every function of the standard ABI is exported as `MPI_x` and
//!   `PMPI_x` (the profiling interface: `MPI_x` calls `PMPI_x`). One not
//!   implemented goes through the error handler of `MPI_COMM_WORLD` with
//!   `MPI_ERR_UNSUPPORTED_OPERATION` and prints once `onesided: MPI_x is
//!   not supported` (`unsupported.rs`).
//! - Errors ([`errors`]): a call checks its arguments before anything
//!   moves, and raises what fails on the handler of the communicator it
//!   names (or `MPI_COMM_WORLD`'s): `MPI_ERRORS_ARE_FATAL` (the default)
//!   and `MPI_ERRORS_ABORT` end the job with one line naming the call and
//!   the cause; `MPI_ERRORS_RETURN` returns the error class; a created
//!   handler is called. Error codes are the error classes.
//! - State (`runtime.rs`): one per process, made by `MPI_Init` (the
//!   `World`, its `Rma`, the communicators), behind one lock held only to
//!   look a handle up; a communicator's calls lock that communicator
//!   alone, so threads (`MPI_THREAD_MULTIPLE`) on different
//!   communicators run side by side.
//! - Collectives (`coll.rs`) run on the communicator's `Comm`: data
//!   movement as bytes, reductions on the Rust type of the predefined
//!   datatype.
//! - Point-to-point (`p2p/`): MPI's matching in software over one
//!   fabric tag, eager messages up to 16 KiB and a rendezvous above.
//!   Cost in p: one posted header receive (16 KiB) per peer used; one
//!   message per eager send, three per rendezvous; no message to a peer
//!   never used.
//!
//! `unsafe` code: this crate receives raw pointers from C; every
//! dereference is in a block with its `// SAFETY:` line, through the
//! helpers of `ptr.rs`.
#![deny(unsafe_op_in_unsafe_fn)]
#![allow(non_snake_case)]

pub mod abi;
mod coll;
mod comm;
mod convert;
mod datatype;
mod derived;
mod env;
mod envelope;
pub mod errors;
mod info;
mod op;
mod p2p;
mod pack;
mod ptr;
mod request;
mod runtime;
mod scan;
mod stage;
mod table;
mod tree;
mod typemap;
mod unsupported;
mod vcoll;
mod win;

/// Defines an MPI function as `PMPI_x` (the body) and `MPI_x` (which
/// calls it), both exported with C linkage.
macro_rules! mpi {
    ($(#[$doc:meta])* fn $name:ident / $pname:ident ($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As the MPI standard requires of the caller: pointers valid for
        /// what the call reads and writes, handles it was given.
        #[no_mangle]
        pub unsafe extern "C" fn $pname($($arg: $ty),*) -> $ret $body

        $(#[$doc])*
        ///
        /// # Safety
        /// As for the `PMPI_` form, which this calls.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            // SAFETY: the caller's guarantees pass on unchanged.
            unsafe { $pname($($arg),*) }
        }
    };
}
pub(crate) use mpi;
