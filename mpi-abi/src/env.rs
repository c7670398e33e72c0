//! The environment: initialization and finalization, the thread level,
//! versions, names, time, memory, and the predefined attributes.

use std::ffi::{c_char, c_double, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::thread::ThreadId;
use std::time::Instant;

use crate::abi::{self, err, Aint, Handle};
use crate::errors::{finish, Fail};
use crate::{mpi, ptr, runtime};

/// The thread that initialized MPI (`MPI_Is_thread_main`).
static MAIN: OnceLock<ThreadId> = OnceLock::new();

/// Where `MPI_Wtime` counts from.
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// This library's version string.
const LIBRARY: &str = concat!(
    "onesided ",
    env!("CARGO_PKG_VERSION"),
    " (MPI 5.0 standard ABI 1.0 over libfabric)"
);

/// The attribute values `MPI_Comm_get_attr` hands out pointers to: they
/// live as long as the process.
static TAG_UB: c_int = i32::MAX;
static UNIVERSE: OnceLock<c_int> = OnceLock::new();
static WTIME_IS_GLOBAL: c_int = 0;
static NO_PROCESS: c_int = abi::PROC_NULL;

fn start(required: c_int) -> Result<c_int, Fail> {
    runtime::init()?;
    let _ = MAIN.set(std::thread::current().id());
    EPOCH.get_or_init(Instant::now);
    // Every level is provided: calls on different communicators run
    // side by side, and one communicator's calls take turns.
    let provided = required.clamp(abi::thread::SINGLE, abi::thread::MULTIPLE);
    runtime::THREAD_LEVEL.store(provided as usize, Ordering::Relaxed);
    Ok(provided)
}

mpi! {
    /// Initializes MPI: the process joins its job (launched by `osrun`,
    /// Hydra's `mpiexec`, Slurm, or alone).
    fn MPI_Init / PMPI_Init(_argc: *mut c_int, _argv: *mut *mut *mut c_char) -> c_int {
        finish("MPI_Init", abi::comm::WORLD, start(abi::thread::SINGLE).map(drop))
    }
}

mpi! {
    /// Initializes MPI with a thread level (every level is provided).
    fn MPI_Init_thread / PMPI_Init_thread(
        _argc: *mut c_int,
        _argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int {
        let result = start(required).and_then(|level| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(provided, level, "provided") }
        });
        finish("MPI_Init_thread", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Whether MPI was initialized.
    fn MPI_Initialized / PMPI_Initialized(flag: *mut c_int) -> c_int {
        let (init, _) = runtime::stage();
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(flag, c_int::from(init), "flag") };
        finish("MPI_Initialized", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Whether MPI was finalized.
    fn MPI_Finalized / PMPI_Finalized(flag: *mut c_int) -> c_int {
        let (_, done) = runtime::stage();
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(flag, c_int::from(done), "flag") };
        finish("MPI_Finalized", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Ends MPI: a barrier over `MPI_COMM_WORLD`, then the world.
    fn MPI_Finalize / PMPI_Finalize() -> c_int {
        finish("MPI_Finalize", abi::comm::WORLD, runtime::finalize())
    }
}

mpi! {
    /// Ends the job with `errorcode`.
    fn MPI_Abort / PMPI_Abort(_comm: Handle, errorcode: c_int) -> c_int {
        let line = format!("onesided: MPI_Abort with code {errorcode}");
        runtime::abort_job(errorcode, &line)
    }
}

mpi! {
    /// The thread level granted.
    fn MPI_Query_thread / PMPI_Query_thread(provided: *mut c_int) -> c_int {
        let level = runtime::THREAD_LEVEL.load(Ordering::Relaxed) as c_int;
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(provided, level, "provided") };
        finish("MPI_Query_thread", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Whether the calling thread initialized MPI.
    fn MPI_Is_thread_main / PMPI_Is_thread_main(flag: *mut c_int) -> c_int {
        let main = MAIN.get() == Some(&std::thread::current().id());
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(flag, c_int::from(main), "flag") };
        finish("MPI_Is_thread_main", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The standard's version whose semantics this library implements.
    fn MPI_Get_version / PMPI_Get_version(version: *mut c_int, subversion: *mut c_int) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(version, abi::VERSION.0, "version") }
            // SAFETY: as the call's contract.
            .and_then(|()| unsafe { ptr::write(subversion, abi::VERSION.1, "subversion") });
        finish("MPI_Get_version", abi::comm::WORLD, result)
    }
}

mpi! {
    /// This library's name and version.
    fn MPI_Get_library_version / PMPI_Get_library_version(
        version: *mut c_char,
        resultlen: *mut c_int,
    ) -> c_int {
        let max = abi::MAX_LIBRARY_VERSION_STRING;
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write_text(version, resultlen, LIBRARY, max) };
        finish("MPI_Get_library_version", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The host's name.
    fn MPI_Get_processor_name / PMPI_Get_processor_name(
        name: *mut c_char,
        resultlen: *mut c_int,
    ) -> c_int {
        let mut host = [0u8; abi::MAX_PROCESSOR_NAME];
        // SAFETY: gethostname writes at most the buffer's length.
        let got = unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) };
        let len = host.iter().position(|&b| b == 0).unwrap_or(host.len());
        let text = match got {
            0 => String::from_utf8_lossy(&host[..len]).into_owned(),
            _ => "localhost".to_owned(),
        };
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write_text(name, resultlen, &text, abi::MAX_PROCESSOR_NAME) };
        finish("MPI_Get_processor_name", abi::comm::WORLD, result)
    }
}

/// Seconds since MPI started (not synchronized across processes).
#[no_mangle]
pub extern "C" fn PMPI_Wtime() -> c_double {
    EPOCH.get_or_init(Instant::now).elapsed().as_secs_f64()
}

/// As [`PMPI_Wtime`].
#[no_mangle]
pub extern "C" fn MPI_Wtime() -> c_double {
    PMPI_Wtime()
}

/// The resolution of [`MPI_Wtime`]: a nanosecond.
#[no_mangle]
pub extern "C" fn PMPI_Wtick() -> c_double {
    1e-9
}

/// As [`PMPI_Wtick`].
#[no_mangle]
pub extern "C" fn MPI_Wtick() -> c_double {
    PMPI_Wtick()
}

mpi! {
    /// `size` bytes of memory (`baseptr` is a `void **`).
    fn MPI_Alloc_mem / PMPI_Alloc_mem(size: Aint, _info: Handle, baseptr: *mut c_void) -> c_int {
        let result = match usize::try_from(size) {
            Err(_) => Err(Fail::new(err::SIZE, format!("size {size}"))),
            Ok(size) => {
                // SAFETY: malloc of any size; null only on failure.
                let p = unsafe { libc::malloc(size.max(1)) };
                match p.is_null() {
                    true => Err(Fail::new(err::NO_MEM, format!("{size} bytes"))),
                    // SAFETY: baseptr points to a void * (the call's contract).
                    false => unsafe { ptr::write(baseptr.cast::<*mut c_void>(), p, "baseptr") },
                }
            }
        };
        finish("MPI_Alloc_mem", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Frees memory of [`MPI_Alloc_mem`].
    fn MPI_Free_mem / PMPI_Free_mem(base: *mut c_void) -> c_int {
        // SAFETY: base came from MPI_Alloc_mem's malloc (the call's contract).
        unsafe { libc::free(base) };
        abi::err::SUCCESS
    }
}

mpi! {
    /// A predefined attribute of a communicator (`MPI_TAG_UB`,
    /// `MPI_UNIVERSE_SIZE`, `MPI_APPNUM`, `MPI_WTIME_IS_GLOBAL`,
    /// `MPI_HOST`, `MPI_IO`); `attribute_val` is a `void *` to set to
    /// the value's address.
    fn MPI_Comm_get_attr / PMPI_Comm_get_attr(
        comm: Handle,
        keyval: c_int,
        attribute_val: *mut c_void,
        flag: *mut c_int,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|_| {
            let universe = || {
                let n = runtime::with(|r| Ok(r.world.size() as c_int)).unwrap_or(1);
                UNIVERSE.get_or_init(|| n)
            };
            let value: Option<&'static c_int> = match keyval {
                abi::key::TAG_UB => Some(&TAG_UB),
                abi::key::UNIVERSE_SIZE => Some(universe()),
                abi::key::WTIME_IS_GLOBAL => Some(&WTIME_IS_GLOBAL),
                abi::key::HOST | abi::key::IO => Some(&NO_PROCESS),
                abi::key::APPNUM | abi::key::LASTUSEDCODE => None,
                _ => return Err(Fail::new(err::KEYVAL, format!("attribute key {keyval}"))),
            };
            if let Some(v) = value {
                let at = attribute_val.cast::<*const c_int>();
                // SAFETY: attribute_val points to a void * (the call's contract).
                unsafe { ptr::write(at, v as *const c_int, "attribute_val") }?;
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(value.is_some()), "flag") }
        });
        finish("MPI_Comm_get_attr", comm, result)
    }
}
