//! Errors: what a call that fails raises ([`Fail`]: its error class and
//! what went wrong, in words), the error handlers, and the classes'
//! strings (`MPI_Error_string`). An error code is its class.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::abi::{self, err, Handle};
use crate::mpi;
use crate::ptr;
use crate::runtime;

/// A call's failure: the error class it raises and the cause. Boxed: a
/// call's `Result` stays one word on the path that succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail(Box<Failure>);

/// What a [`Fail`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error class (`MPI_ERR_...`).
    pub class: c_int,
    /// What went wrong, for the one line an aborting handler prints.
    pub text: String,
}

impl Fail {
    /// A failure of `class` because of `text`.
    #[cold]
    pub fn new(class: c_int, text: impl Into<String>) -> Fail {
        Fail(Box::new(Failure {
            class,
            text: text.into(),
        }))
    }
}

impl std::ops::Deref for Fail {
    type Target = Failure;

    fn deref(&self) -> &Failure {
        &self.0
    }
}

impl From<onesided::Error> for Fail {
    fn from(e: onesided::Error) -> Fail {
        use onesided::collectives::Error as C;
        use onesided::rma::Error as R;
        let class = match &e {
            onesided::Error::Collective(C::BadOp { .. }) => err::OP,
            onesided::Error::Collective(C::BadCall(_)) => err::ARG,
            onesided::Error::Collective(C::Late { .. } | C::Failed(_)) => err::PROC_ABORTED,
            onesided::Error::Rma(R::OutOfRange { .. }) => err::RMA_RANGE,
            onesided::Error::Rma(R::NoEpoch { .. } | R::NotLocked { .. }) => err::RMA_SYNC,
            onesided::Error::Rma(R::AlreadyLocked { .. } | R::EpochConflict(_)) => {
                err::RMA_CONFLICT
            }
            onesided::Error::Rma(R::BadAssert { .. }) => err::ASSERT,
            onesided::Error::Rma(R::BadGroup(_) | R::NotInGroup { .. }) => err::GROUP,
            onesided::Error::Rma(R::UnsupportedOp { .. }) => err::OP,
            onesided::Error::Fabric(onesided::fabric::Error::PeerDead { .. }) => err::PROC_ABORTED,
            _ => err::OTHER,
        };
        Fail::new(class, e.to_string())
    }
}

macro_rules! from_layer {
    ($($t:ty),*) => {$(
        impl From<$t> for Fail {
            fn from(e: $t) -> Fail {
                Fail::from(onesided::Error::from(e))
            }
        }
    )*};
}
from_layer!(
    onesided::collectives::Error,
    onesided::rma::Error,
    onesided::fabric::Error
);

/// An error handler.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Errhandler {
    /// `MPI_ERRORS_ARE_FATAL`: the job ends.
    Fatal,
    /// `MPI_ERRORS_ABORT`: the job ends (the communicator's processes;
    /// here the job's).
    Abort,
    /// `MPI_ERRORS_RETURN`: the call returns the class.
    Return,
    /// Made by `MPI_Comm_create_errhandler`.
    User(UserHandler),
}

/// A communicator's error handler function (`MPI_Comm_errhandler_function`).
pub(crate) type UserHandler = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);

/// The error class's description (`MPI_Error_string`).
pub fn describe(class: c_int) -> &'static str {
    match class {
        err::SUCCESS => "no error",
        err::BUFFER => "invalid buffer pointer",
        err::COUNT => "invalid count argument",
        err::TYPE => "invalid datatype",
        err::TAG => "invalid tag",
        err::COMM => "invalid communicator",
        err::RANK => "invalid rank",
        err::REQUEST => "invalid request",
        err::ROOT => "invalid root",
        err::GROUP => "invalid group",
        err::OP => "invalid operation",
        err::ARG => "invalid argument",
        err::TRUNCATE => "message truncated",
        err::OTHER => "other error",
        err::INTERN => "internal error",
        err::ASSERT => "invalid assertion",
        err::KEYVAL => "invalid attribute key",
        err::LOCKTYPE => "invalid lock type",
        err::NO_MEM => "out of memory",
        err::RMA_CONFLICT => "conflicting accesses to a window",
        err::RMA_RANGE => "access outside the window",
        err::RMA_SYNC => "wrong synchronization of RMA calls",
        err::UNSUPPORTED_OPERATION => "operation not supported by onesided",
        err::WIN => "invalid window",
        err::PROC_ABORTED => "a process of the operation has ended",
        err::ERRHANDLER => "invalid error handler",
        err::INFO => "invalid info object",
        err::SIZE => "invalid size",
        err::DISP => "invalid displacement",
        err::UNKNOWN => "unknown error",
        _ => "unknown error class",
    }
}

/// Ends a call: `MPI_SUCCESS`, or `result`'s failure raised on the
/// handler of communicator `comm` (`MPI_COMM_WORLD`'s when it has none).
pub(crate) fn finish(call: &str, comm: Handle, result: Result<(), Fail>) -> c_int {
    match result {
        Ok(()) => err::SUCCESS,
        Err(fail) => raise(call, comm, fail),
    }
}

/// Ends a call on window `win`: `MPI_SUCCESS`, or `result`'s failure
/// raised on the window's handler.
pub(crate) fn finish_win(call: &str, win: Handle, result: Result<(), Fail>) -> c_int {
    match result {
        Ok(()) => err::SUCCESS,
        Err(fail) => handle(call, runtime::win_errhandler_of(win), win, fail),
    }
}

/// Raises `fail` of `call` on the handler of communicator `comm`.
pub(crate) fn raise(call: &str, comm: Handle, fail: Fail) -> c_int {
    let (handler, comm) = runtime::errhandler_of(comm);
    handle(call, handler, comm, fail)
}

/// Has `handler` handle `fail` of `call` on `object` (the communicator
/// or window it names).
fn handle(call: &str, handler: Errhandler, object: Handle, fail: Fail) -> c_int {
    match handler {
        Errhandler::Return => fail.class,
        Errhandler::Fatal | Errhandler::Abort => {
            let line = format!("onesided: {call}: {} ({})", fail.text, describe(fail.class));
            runtime::abort_job(fail.class, &line)
        }
        Errhandler::User(f) => {
            let (mut object, mut code) = (object, fail.class);
            // SAFETY: a handler the program registered, called as the
            // standard says: the communicator (or window) and the error
            // code, by pointer.
            unsafe { f(&mut object, &mut code) };
            fail.class
        }
    }
}

/// A function onesided does not implement: says so once, and raises
/// `MPI_ERR_UNSUPPORTED_OPERATION` on `MPI_COMM_WORLD`.
pub(crate) fn unsupported(name: &str) -> c_int {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        eprintln!("onesided: {name} is not supported");
    }
    let fail = Fail::new(
        err::UNSUPPORTED_OPERATION,
        format!("{name} is not supported"),
    );
    raise(name, abi::comm::WORLD, fail)
}

mpi! {
    /// The class of an error code: the code itself.
    fn MPI_Error_class / PMPI_Error_class(errorcode: c_int, errorclass: *mut c_int) -> c_int {
        let result = match (0..=err::LASTCODE).contains(&errorcode) {
            // SAFETY: as the call's contract.
            true => unsafe { ptr::write(errorclass, errorcode, "errorclass") },
            false => Err(Fail::new(err::ARG, format!("error code {errorcode}"))),
        };
        finish("MPI_Error_class", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The description of an error code.
    fn MPI_Error_string / PMPI_Error_string(
        errorcode: c_int,
        string: *mut c_char,
        resultlen: *mut c_int,
    ) -> c_int {
        let text = describe(errorcode);
        // SAFETY: as the call's contract (a buffer of MPI_MAX_ERROR_STRING).
        let result = unsafe { ptr::write_text(string, resultlen, text, abi::MAX_ERROR_STRING) };
        finish("MPI_Error_string", abi::comm::WORLD, result)
    }
}
