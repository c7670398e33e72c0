//! Handles to and from `int` (`MPI_Comm_toint`, `MPI_Comm_fromint`, ...,
//! for Fortran and for tools), and address arithmetic. A handle's `int`
//! is its value: the predefined ones are small, and a table's stay below
//! `INT_MAX` ([`crate::table`]). `MPI_Get_address`.

use std::ffi::{c_int, c_void};

use crate::abi::{self, Aint, Handle};
use crate::errors::finish;
use crate::{mpi, ptr};

macro_rules! conversions {
    ($($to:ident / $pto:ident, $from:ident / $pfrom:ident;)*) => {$(
        /// The handle as an `int`.
        #[no_mangle]
        pub extern "C" fn $pto(handle: Handle) -> c_int {
            handle as c_int
        }

        /// As the `PMPI_` form.
        #[no_mangle]
        pub extern "C" fn $to(handle: Handle) -> c_int {
            $pto(handle)
        }

        /// The handle of an `int` made by the `toint` form.
        #[no_mangle]
        pub extern "C" fn $pfrom(value: c_int) -> Handle {
            value as u32 as Handle
        }

        /// As the `PMPI_` form.
        #[no_mangle]
        pub extern "C" fn $from(value: c_int) -> Handle {
            $pfrom(value)
        }
    )*};
}

conversions! {
    MPI_Comm_toint / PMPI_Comm_toint, MPI_Comm_fromint / PMPI_Comm_fromint;
    MPI_Errhandler_toint / PMPI_Errhandler_toint, MPI_Errhandler_fromint / PMPI_Errhandler_fromint;
    MPI_File_toint / PMPI_File_toint, MPI_File_fromint / PMPI_File_fromint;
    MPI_Group_toint / PMPI_Group_toint, MPI_Group_fromint / PMPI_Group_fromint;
    MPI_Info_toint / PMPI_Info_toint, MPI_Info_fromint / PMPI_Info_fromint;
    MPI_Message_toint / PMPI_Message_toint, MPI_Message_fromint / PMPI_Message_fromint;
    MPI_Op_toint / PMPI_Op_toint, MPI_Op_fromint / PMPI_Op_fromint;
    MPI_Request_toint / PMPI_Request_toint, MPI_Request_fromint / PMPI_Request_fromint;
    MPI_Session_toint / PMPI_Session_toint, MPI_Session_fromint / PMPI_Session_fromint;
    MPI_Type_toint / PMPI_Type_toint, MPI_Type_fromint / PMPI_Type_fromint;
    MPI_Win_toint / PMPI_Win_toint, MPI_Win_fromint / PMPI_Win_fromint;
}

/// `base + disp`.
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: Aint, disp: Aint) -> Aint {
    base.wrapping_add(disp)
}

/// As [`PMPI_Aint_add`].
#[no_mangle]
pub extern "C" fn MPI_Aint_add(base: Aint, disp: Aint) -> Aint {
    PMPI_Aint_add(base, disp)
}

/// `addr1 - addr2`.
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: Aint, addr2: Aint) -> Aint {
    addr1.wrapping_sub(addr2)
}

/// As [`PMPI_Aint_diff`].
#[no_mangle]
pub extern "C" fn MPI_Aint_diff(addr1: Aint, addr2: Aint) -> Aint {
    PMPI_Aint_diff(addr1, addr2)
}

mpi! {
    /// The address of `location`, as derived datatypes and `MPI_BOTTOM`
    /// take it.
    fn MPI_Get_address / PMPI_Get_address(location: *const c_void, address: *mut Aint) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::write(address, location as Aint, "address") };
        finish("MPI_Get_address", abi::comm::WORLD, result)
    }
}
