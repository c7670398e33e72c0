//! How a datatype was made: `MPI_Type_get_envelope` (the constructor and
//! how many arguments of each kind it took) and `MPI_Type_get_contents`
//! (the arguments). Each datatype the program makes keeps its
//! [`Recipe`]: the constructor's integers, addresses and datatypes, the
//! program's datatypes as they were then (a program may free them
//! after); `_contents` hands those back as new datatypes, which the
//! program frees, as MPI says.

use std::ffi::c_int;

use crate::abi::{self, err, Aint, Handle};
use crate::derived::{self, Derived};
use crate::errors::{finish, Fail};
use crate::{datatype, mpi, ptr, runtime};

/// A type constructor (`MPI_COMBINER_...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Combiner {
    Dup = 102,
    Contiguous = 103,
    Vector = 104,
    Hvector = 105,
    Indexed = 106,
    Hindexed = 107,
    IndexedBlock = 108,
    HindexedBlock = 109,
    Struct = 110,
    Subarray = 111,
    Resized = 116,
}

/// `MPI_COMBINER_NAMED`: a predefined datatype.
const NAMED: c_int = 101;

/// A datatype a constructor took.
enum Constituent {
    /// A predefined one.
    Named(Handle),
    /// The program's, as it was.
    Made(Derived),
}

/// A constructor and its arguments, in the order and kinds of MPI's
/// table for `MPI_Type_get_contents`.
pub(crate) struct Recipe {
    combiner: Combiner,
    ints: Vec<c_int>,
    aints: Vec<Aint>,
    types: Vec<Constituent>,
}

impl Recipe {
    /// The recipe of a datatype made by `combiner` from these arguments.
    ///
    /// # Errors
    /// `MPI_ERR_TYPE` for a datatype that is not one.
    pub(crate) fn new(
        combiner: Combiner,
        ints: Vec<c_int>,
        aints: Vec<Aint>,
        types: &[Handle],
    ) -> Result<Recipe, Fail> {
        let types = types
            .iter()
            .map(|&t| match datatype::predefined(t) {
                Some(_) => Ok(Constituent::Named(t)),
                None => derived::derived(t).map(Constituent::Made),
            })
            .collect::<Result<_, _>>()?;
        Ok(Recipe {
            combiner,
            ints,
            aints,
            types,
        })
    }
}

/// The recipe of the program's datatype `handle`; `None` for a
/// predefined one.
fn recipe_of(handle: Handle) -> Result<Option<std::sync::Arc<Recipe>>, Fail> {
    match datatype::predefined(handle) {
        Some(_) => Ok(None),
        None => derived::derived(handle).map(|d| Some(d.recipe)),
    }
}

mpi! {
    /// How many integers, addresses and datatypes made `datatype`, and
    /// by which constructor (`MPI_COMBINER_NAMED` for a predefined one).
    fn MPI_Type_get_envelope / PMPI_Type_get_envelope(
        datatype: Handle,
        num_integers: *mut c_int,
        num_addresses: *mut c_int,
        num_datatypes: *mut c_int,
        combiner: *mut c_int,
    ) -> c_int {
        let result = recipe_of(datatype).and_then(|recipe| {
            let (n, kind) = match &recipe {
                Some(r) => ([r.ints.len(), r.aints.len(), r.types.len()], r.combiner as c_int),
                None => ([0; 3], NAMED),
            };
            for (out, k) in [num_integers, num_addresses, num_datatypes].into_iter().zip(n) {
                // SAFETY: as the call's contract.
                unsafe { ptr::write(out, k as c_int, "num_") }?;
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(combiner, kind, "combiner") }
        });
        finish("MPI_Type_get_envelope", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The arguments that made `datatype`; its datatypes of the
    /// program's come back as new datatypes.
    fn MPI_Type_get_contents / PMPI_Type_get_contents(
        datatype: Handle,
        max_integers: c_int,
        max_addresses: c_int,
        max_datatypes: c_int,
        array_of_integers: *mut c_int,
        array_of_addresses: *mut Aint,
        array_of_datatypes: *mut Handle,
    ) -> c_int {
        let result = recipe_of(datatype).and_then(|recipe| {
            let Some(r) = recipe else {
                return Err(Fail::new(err::TYPE, format!("predefined datatype {datatype:#x} has no contents")));
            };
            let fits = |len: usize, max: c_int| usize::try_from(max).is_ok_and(|m| len <= m);
            if !fits(r.ints.len(), max_integers) || !fits(r.aints.len(), max_addresses) || !fits(r.types.len(), max_datatypes) {
                let what = format!("room for {max_integers}, {max_addresses}, {max_datatypes} of {}, {}, {}", r.ints.len(), r.aints.len(), r.types.len());
                return Err(Fail::new(err::ARG, what));
            }
            // SAFETY: room for max_integers ints (the call's contract).
            unsafe { ptr::slice_mut(array_of_integers, r.ints.len(), "array_of_integers") }?.copy_from_slice(&r.ints);
            // SAFETY: room for max_addresses addresses (the call's contract).
            unsafe { ptr::slice_mut(array_of_addresses, r.aints.len(), "array_of_addresses") }?.copy_from_slice(&r.aints);
            // SAFETY: room for max_datatypes handles (the call's contract).
            let out = unsafe { ptr::slice_mut(array_of_datatypes, r.types.len(), "array_of_datatypes") }?;
            runtime::with(|rt| {
                for (o, t) in out.iter_mut().zip(&r.types) {
                    *o = match t {
                        Constituent::Named(h) => *h,
                        Constituent::Made(d) => rt.types.insert(d.clone()),
                    };
                }
                Ok(())
            })
        });
        finish("MPI_Type_get_contents", abi::comm::WORLD, result)
    }
}
