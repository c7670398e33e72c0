//! Derived datatypes: the type constructors of MPI over [`TypeMap`],
//! `MPI_Type_commit`, `_free`, `_dup`, `_set_name`/`_get_name`, and
//! packing and unpacking the program's buffers by a type map.
//!
//! Where they go: point-to-point takes any committed datatype (a
//! non-contiguous one is packed before it is sent and unpacked when it
//! has been received), so do the collectives that move data
//! (`stage.rs`, `vcoll.rs`) and `Put`/`Get`; the other calls take a
//! contiguous one (copies of a
//! predefined type one after the other, moved as bytes) and refuse
//! another with `MPI_ERR_TYPE`.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use crate::abi::{self, err, Aint, Handle};
use crate::datatype;
use crate::envelope::{Combiner, Recipe};
use crate::errors::{finish, Fail};
use crate::typemap::{Invalid, TypeMap};
use crate::{mpi, ptr, runtime};

/// A datatype the program made.
#[derive(Clone)]
pub(crate) struct Derived {
    pub(crate) map: Arc<TypeMap>,
    pub(crate) committed: bool,
    pub(crate) name: String,
    /// How it was made (`MPI_Type_get_envelope`, `_contents`).
    pub(crate) recipe: Arc<Recipe>,
}

impl From<Invalid> for Fail {
    fn from(Invalid(what): Invalid) -> Fail {
        Fail::new(err::ARG, what)
    }
}

/// `MPI_ORDER_C`.
const ORDER_C: c_int = 12;
/// `MPI_ORDER_FORTRAN`.
const ORDER_FORTRAN: c_int = 15;

/// The type map of `handle` (predefined or made by the program, committed
/// or not).
///
/// # Errors
/// `MPI_ERR_TYPE` for an invalid handle.
pub(crate) fn map_of(handle: Handle) -> Result<Arc<TypeMap>, Fail> {
    if let Some((size, element)) = datatype::predefined(handle) {
        return Ok(Arc::new(TypeMap::predefined(size, element)));
    }
    derived(handle).map(|d| d.map)
}

/// The program's datatype `handle`.
///
/// # Errors
/// `MPI_ERR_TYPE` for a handle that is not one.
pub(crate) fn derived(handle: Handle) -> Result<Derived, Fail> {
    runtime::with(|r| {
        (r.types.get(handle).cloned())
            .ok_or_else(|| Fail::new(err::TYPE, format!("invalid datatype {handle:#x}")))
    })
}

/// The type map of `handle` for communication: it must be committed.
///
/// # Errors
/// `MPI_ERR_TYPE` for an invalid or uncommitted datatype.
pub(crate) fn committed(handle: Handle) -> Result<Arc<TypeMap>, Fail> {
    if let Some((size, element)) = datatype::predefined(handle) {
        return Ok(Arc::new(TypeMap::predefined(size, element)));
    }
    let d = derived(handle)?;
    match d.committed {
        true => Ok(d.map),
        false => Err(Fail::new(
            err::TYPE,
            format!("datatype {handle:#x} is not committed"),
        )),
    }
}

/// The bytes of data in `count` elements of `map`.
///
/// # Errors
/// `MPI_ERR_COUNT` past what an address holds.
pub(crate) fn bytes_of(map: &TypeMap, count: usize) -> Result<usize, Fail> {
    (map.size.checked_mul(count))
        .filter(|&b| isize::try_from(b).is_ok())
        .ok_or_else(|| {
            Fail::new(
                err::COUNT,
                format!("{count} elements of {} bytes", map.size),
            )
        })
}

/// The byte address of element `i`'s run `at` from `base` (`MPI_BOTTOM`,
/// null, makes displacements absolute addresses).
fn address(base: usize, map: &TypeMap, i: usize, at: isize) -> usize {
    (base as isize)
        .wrapping_add((i as isize).wrapping_mul(map.extent()))
        .wrapping_add(at) as usize
}

/// `count` elements of `map` at `base`, packed one after the other.
///
/// # Safety
/// Every run of the `count` elements is valid for reads.
pub(crate) unsafe fn pack(map: &TypeMap, base: *const u8, count: usize) -> Vec<u8> {
    if map.is_dense() {
        let len = map.size.saturating_mul(count);
        if len == 0 {
            return Vec::new();
        }
        // SAFETY: as this function's contract: the elements lie one after
        // the other from base.
        return unsafe { std::slice::from_raw_parts(base, len) }.to_vec();
    }
    let mut out = Vec::with_capacity(map.size.saturating_mul(count));
    for i in 0..count {
        for run in &map.runs {
            let at = address(base as usize, map, i, run.at) as *const u8;
            // SAFETY: as this function's contract.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(at, run.len) });
        }
    }
    out
}

/// Puts packed `data` into the elements of `map` at `base`, as far as it
/// goes (at most `count` elements; a last one may be partial).
///
/// # Safety
/// Every run of the `count` elements is valid for writes, and nothing
/// else reaches them meanwhile.
pub(crate) unsafe fn unpack(map: &TypeMap, data: &[u8], base: *mut u8, count: usize) {
    if map.is_dense() {
        let len = data.len().min(map.size.saturating_mul(count));
        if len > 0 {
            // SAFETY: as this function's contract: the elements lie one
            // after the other from base.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), base, len) };
        }
        return;
    }
    let mut from = 0usize;
    'elements: for i in 0..count {
        for run in &map.runs {
            if from >= data.len() {
                break 'elements;
            }
            let len = run.len.min(data.len() - from);
            let at = address(base as usize, map, i, run.at) as *mut u8;
            // SAFETY: as this function's contract; the source is data.
            unsafe { std::ptr::copy_nonoverlapping(data[from..].as_ptr(), at, len) };
            from += len;
        }
    }
}

/// Makes a new datatype of `map`, made by `recipe`, and writes its
/// handle to `newtype`.
///
/// # Safety
/// `newtype` is valid for a handle.
unsafe fn made(made: Result<(TypeMap, Recipe), Fail>, newtype: *mut Handle) -> Result<(), Fail> {
    let (map, recipe) = made?;
    let d = Derived {
        map: Arc::new(map),
        committed: false,
        name: String::new(),
        recipe: Arc::new(recipe),
    };
    let handle = runtime::with(|r| Ok(r.types.insert(d)))?;
    // SAFETY: as this function's contract.
    unsafe { ptr::write(newtype, handle, "newtype") }
}

/// `n` as a count.
fn count(n: c_int) -> Result<usize, Fail> {
    usize::try_from(n).map_err(|_| Fail::new(err::COUNT, format!("count {n}")))
}

/// Counts as the ints a constructor took (each came from one).
fn lens_of(counts: &[usize]) -> Vec<c_int> {
    counts.iter().map(|&c| c as c_int).collect()
}

/// `n` counts of a call's array.
///
/// # Safety
/// `p` is valid for `n` ints.
unsafe fn counts(p: *const c_int, n: usize, what: &str) -> Result<Vec<usize>, Fail> {
    // SAFETY: as this function's contract.
    let raw = unsafe { ptr::slice(p, n, what) }?;
    raw.iter().map(|&c| count(c)).collect()
}

mpi! {
    /// `count` copies of `oldtype`, one after the other.
    fn MPI_Type_contiguous / PMPI_Type_contiguous(count_: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
        let map = (|| {
            let map = TypeMap::contiguous(count(count_)?, &*map_of(oldtype)?)?;
            Ok((map, Recipe::new(Combiner::Contiguous, vec![count_], vec![], &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_contiguous", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// `count` blocks of `blocklength` copies of `oldtype`, `stride`
    /// extents apart.
    fn MPI_Type_vector / PMPI_Type_vector(
        count_: c_int,
        blocklength: c_int,
        stride: c_int,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let old = map_of(oldtype)?;
            let map = TypeMap::vector(count(count_)?, count(blocklength)?, stride as isize, &old)?;
            let ints = vec![count_, blocklength, stride];
            Ok((map, Recipe::new(Combiner::Vector, ints, vec![], &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_vector", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// As `MPI_Type_vector`, the stride in bytes.
    fn MPI_Type_create_hvector / PMPI_Type_create_hvector(
        count_: c_int,
        blocklength: c_int,
        stride: Aint,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let old = map_of(oldtype)?;
            let map = TypeMap::hvector(count(count_)?, count(blocklength)?, stride, &old)?;
            let ints = vec![count_, blocklength];
            Ok((map, Recipe::new(Combiner::Hvector, ints, vec![stride], &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_hvector", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// Blocks of `blocklengths[i]` copies of `oldtype` at `displacements[i]`
    /// extents.
    fn MPI_Type_indexed / PMPI_Type_indexed(
        count_: c_int,
        blocklengths: *const c_int,
        displacements: *const c_int,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let n = count(count_)?;
            // SAFETY: n ints each (the call's contract).
            let lens = unsafe { counts(blocklengths, n, "array_of_blocklengths") }?;
            // SAFETY: as above.
            let raw = unsafe { ptr::slice(displacements, n, "array_of_displacements") }?;
            let displs: Vec<isize> = raw.iter().map(|&d| d as isize).collect();
            let map = TypeMap::indexed(&lens, &displs, false, &*map_of(oldtype)?)?;
            let ints = [&[count_][..], &lens_of(&lens), raw].concat();
            Ok((map, Recipe::new(Combiner::Indexed, ints, vec![], &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_indexed", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// Blocks of `blocklengths[i]` copies of `oldtype` at byte
    /// `displacements[i]`.
    fn MPI_Type_create_hindexed / PMPI_Type_create_hindexed(
        count_: c_int,
        blocklengths: *const c_int,
        displacements: *const Aint,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let n = count(count_)?;
            // SAFETY: n ints and n addresses (the call's contract).
            let lens = unsafe { counts(blocklengths, n, "array_of_blocklengths") }?;
            // SAFETY: as above.
            let displs = unsafe { ptr::slice(displacements, n, "array_of_displacements") }?;
            let map = TypeMap::indexed(&lens, displs, true, &*map_of(oldtype)?)?;
            let ints = [&[count_][..], &lens_of(&lens)].concat();
            Ok((map, Recipe::new(Combiner::Hindexed, ints, displs.to_vec(), &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_hindexed", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// Blocks of `blocklength` copies of `oldtype` at `displacements[i]`
    /// extents.
    fn MPI_Type_create_indexed_block / PMPI_Type_create_indexed_block(
        count_: c_int,
        blocklength: c_int,
        displacements: *const c_int,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let n = count(count_)?;
            // SAFETY: n ints (the call's contract).
            let raw = unsafe { ptr::slice(displacements, n, "array_of_displacements") }?;
            let displs: Vec<isize> = raw.iter().map(|&d| d as isize).collect();
            let lens = vec![count(blocklength)?; n];
            let map = TypeMap::indexed(&lens, &displs, false, &*map_of(oldtype)?)?;
            let ints = [&[count_, blocklength][..], raw].concat();
            Ok((map, Recipe::new(Combiner::IndexedBlock, ints, vec![], &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_indexed_block", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// Blocks of `blocklength` copies of `oldtype` at byte
    /// `displacements[i]`.
    fn MPI_Type_create_hindexed_block / PMPI_Type_create_hindexed_block(
        count_: c_int,
        blocklength: c_int,
        displacements: *const Aint,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let n = count(count_)?;
            // SAFETY: n addresses (the call's contract).
            let displs = unsafe { ptr::slice(displacements, n, "array_of_displacements") }?;
            let lens = vec![count(blocklength)?; n];
            let map = TypeMap::indexed(&lens, displs, true, &*map_of(oldtype)?)?;
            let (ints, aints) = (vec![count_, blocklength], displs.to_vec());
            Ok((map, Recipe::new(Combiner::HindexedBlock, ints, aints, &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_hindexed_block", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// Blocks of `blocklengths[i]` copies of `types[i]` at byte
    /// `displacements[i]`.
    fn MPI_Type_create_struct / PMPI_Type_create_struct(
        count_: c_int,
        blocklengths: *const c_int,
        displacements: *const Aint,
        types: *const Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let n = count(count_)?;
            // SAFETY: n of each (the call's contract).
            let lens = unsafe { counts(blocklengths, n, "array_of_blocklengths") }?;
            // SAFETY: as above.
            let displs = unsafe { ptr::slice(displacements, n, "array_of_displacements") }?;
            // SAFETY: as above.
            let handles = unsafe { ptr::slice(types, n, "array_of_types") }?;
            let maps = handles.iter().map(|&h| map_of(h)).collect::<Result<Vec<_>, Fail>>()?;
            let refs: Vec<&TypeMap> = maps.iter().map(|m| &**m).collect();
            let map = TypeMap::structure(&lens, displs, &refs)?;
            let ints = [&[count_][..], &lens_of(&lens)].concat();
            Ok((map, Recipe::new(Combiner::Struct, ints, displs.to_vec(), handles)?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_struct", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// A subarray of an `ndims`-dimensional array of `oldtype`, in C or
    /// Fortran order.
    fn MPI_Type_create_subarray / PMPI_Type_create_subarray(
        ndims: c_int,
        sizes: *const c_int,
        subsizes: *const c_int,
        starts: *const c_int,
        order: c_int,
        oldtype: Handle,
        newtype: *mut Handle,
    ) -> c_int {
        let map = (|| {
            let n = count(ndims)?;
            // SAFETY: ndims ints each (the call's contract).
            let sizes = unsafe { counts(sizes, n, "array_of_sizes") }?;
            // SAFETY: as above.
            let subsizes = unsafe { counts(subsizes, n, "array_of_subsizes") }?;
            // SAFETY: as above.
            let starts = unsafe { counts(starts, n, "array_of_starts") }?;
            let c_order = match order {
                ORDER_C => true,
                ORDER_FORTRAN => false,
                _ => return Err(Fail::new(err::ARG, format!("order {order}"))),
            };
            let map = TypeMap::subarray(&sizes, &subsizes, &starts, c_order, &*map_of(oldtype)?)?;
            let dims = [&sizes[..], &subsizes, &starts].concat();
            let ints = [&[ndims][..], &lens_of(&dims), &[order]].concat();
            Ok((map, Recipe::new(Combiner::Subarray, ints, vec![], &[oldtype])?))
        })();
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_subarray", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// `oldtype` with lower bound `lb` and extent `extent`.
    fn MPI_Type_create_resized / PMPI_Type_create_resized(
        oldtype: Handle,
        lb: Aint,
        extent: Aint,
        newtype: *mut Handle,
    ) -> c_int {
        let map = map_of(oldtype).and_then(|old| {
            let map = TypeMap::resized(&old, lb, extent)?;
            Ok((map, Recipe::new(Combiner::Resized, vec![], vec![lb, extent], &[oldtype])?))
        });
        // SAFETY: as the call's contract.
        finish("MPI_Type_create_resized", abi::comm::WORLD, unsafe { made(map, newtype) })
    }
}

mpi! {
    /// A copy of `oldtype` (committed if it is).
    fn MPI_Type_dup / PMPI_Type_dup(oldtype: Handle, newtype: *mut Handle) -> c_int {
        let result = (|| {
            let recipe = Arc::new(Recipe::new(Combiner::Dup, vec![], vec![], &[oldtype])?);
            let d = match datatype::predefined(oldtype) {
                Some(_) => Derived { map: map_of(oldtype)?, committed: true, name: String::new(), recipe },
                None => Derived { recipe, ..derived(oldtype)? },
            };
            let handle = runtime::with(|r| Ok(r.types.insert(d)))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newtype, handle, "newtype") }
        })();
        finish("MPI_Type_dup", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Makes a datatype usable in communication.
    fn MPI_Type_commit / PMPI_Type_commit(datatype: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(datatype, "datatype") }.and_then(|h| {
            if datatype::predefined(h).is_some() {
                return Ok(());
            }
            runtime::with(|r| match r.types.get_mut(h) {
                Some(d) => {
                    d.committed = true;
                    Ok(())
                }
                None => Err(Fail::new(err::TYPE, format!("invalid datatype {h:#x}"))),
            })
        });
        finish("MPI_Type_commit", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Frees a datatype of the program's; the handle becomes
    /// `MPI_DATATYPE_NULL` (types made from it keep their own maps).
    fn MPI_Type_free / PMPI_Type_free(datatype: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(datatype, "datatype") }.and_then(|h| {
            runtime::with(|r| {
                (r.types.remove(h).map(drop))
                    .ok_or_else(|| Fail::new(err::TYPE, format!("cannot free datatype {h:#x}")))
            })?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(datatype, abi::datatype::NULL, "datatype") }
        });
        finish("MPI_Type_free", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Names a datatype of the program's.
    fn MPI_Type_set_name / PMPI_Type_set_name(datatype: Handle, type_name: *const c_char) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read_name(type_name) }.and_then(|name| {
            runtime::with(|r| match r.types.get_mut(datatype) {
                Some(d) => {
                    d.name = name;
                    Ok(())
                }
                None => Err(Fail::new(err::TYPE, format!("cannot name datatype {datatype:#x}"))),
            })
        });
        finish("MPI_Type_set_name", abi::comm::WORLD, result)
    }
}

mpi! {
    /// A datatype's name (`MPI_INT` for a predefined one; what
    /// `MPI_Type_set_name` gave, or empty, for the program's).
    fn MPI_Type_get_name / PMPI_Type_get_name(
        datatype: Handle,
        type_name: *mut c_char,
        resultlen: *mut c_int,
    ) -> c_int {
        let result = match datatype::predefined_name(datatype) {
            Some(name) => Ok(name.to_string()),
            None => derived(datatype).map(|d| d.name),
        }
        .and_then(|name| {
            // SAFETY: a buffer of MPI_MAX_OBJECT_NAME (the call's contract).
            unsafe { ptr::write_text(type_name, resultlen, &name, abi::MAX_OBJECT_NAME) }
        });
        finish("MPI_Type_get_name", abi::comm::WORLD, result)
    }
}
