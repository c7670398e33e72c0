//! Communicators and groups: rank and size, duplication, splitting,
//! comparison, error handlers, and the group operations.

use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use onesided::rma::Group;

use crate::abi::{self, compare, err, Handle};
use crate::errors::{finish, Errhandler, Fail, UserHandler};
use crate::runtime::{self, CommEntry};
use crate::{mpi, ptr};

mpi! {
    /// This process's rank in `comm`.
    fn MPI_Comm_rank / PMPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(rank, c.rank as c_int, "rank") }
        });
        finish("MPI_Comm_rank", comm, result)
    }
}

mpi! {
    /// The number of processes in `comm`.
    fn MPI_Comm_size / PMPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, c.size() as c_int, "size") }
        });
        finish("MPI_Comm_size", comm, result)
    }
}

/// A new communicator over `group`, with `errhandler`, in the table.
fn insert(group: Group, errhandler: Handle) -> Result<Handle, Fail> {
    runtime::with(|r| {
        let entry = CommEntry::new(&r.rma, group, errhandler)?;
        Ok(r.comms.insert(Arc::new(entry)))
    })
}

mpi! {
    /// A communicator over the same group (collective), with the same
    /// error handler.
    fn MPI_Comm_dup / PMPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let handle = insert(c.group.clone(), c.errhandler.load(Ordering::Relaxed))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newcomm, handle, "newcomm") }
        });
        finish("MPI_Comm_dup", comm, result)
    }
}

mpi! {
    /// Frees a communicator; the handle becomes `MPI_COMM_NULL`.
    fn MPI_Comm_free / PMPI_Comm_free(comm: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let handle = unsafe { ptr::read(comm, "comm") }.unwrap_or(abi::comm::NULL);
        let result = runtime::with(|r| match r.comms.remove(handle) {
            Some(entry) => {
                crate::p2p::forget(&entry);
                runtime::forget_lookups();
                Ok(())
            }
            None => Err(Fail::new(err::COMM, format!("cannot free communicator {handle:#x}"))),
        })
        // SAFETY: as the call's contract.
        .and_then(|()| unsafe { ptr::write(comm, abi::comm::NULL, "comm") });
        finish("MPI_Comm_free", handle, result)
    }
}

/// The members of `color` in the order of `(key, rank)`, from every
/// rank's `(color, key)`; none for `MPI_UNDEFINED`.
pub(crate) fn split_members(all: &[(c_int, c_int)], color: c_int) -> Vec<u32> {
    if color == abi::UNDEFINED {
        return Vec::new();
    }
    let mut members: Vec<(c_int, u32)> = (all.iter().enumerate())
        .filter(|(_, &(c, _))| c == color)
        .map(|(r, &(_, k))| (k, r as u32))
        .collect();
    members.sort_unstable();
    members.into_iter().map(|(_, r)| r).collect()
}

/// Splits `c` by `color`, ranked by `key` then rank (collective: one
/// allgather of two integers): the new communicator, or `MPI_COMM_NULL`
/// for `MPI_UNDEFINED`.
fn split(c: &CommEntry, color: c_int, key: c_int) -> Result<Handle, Fail> {
    let n = c.size() as usize;
    let mut all = vec![0i32; 2 * n];
    c.lock().allgatherv(&[color, key], &mut all, &vec![2; n])?;
    let pairs: Vec<(c_int, c_int)> = all.chunks(2).map(|p| (p[0], p[1])).collect();
    let members = split_members(&pairs, color);
    if members.is_empty() {
        return Ok(abi::comm::NULL);
    }
    let jobs = (members.iter())
        .map(|&r| c.group.job_rank(r))
        .collect::<Result<Vec<u32>, _>>()?;
    insert(Group::new(jobs)?, c.errhandler.load(Ordering::Relaxed))
}

/// `MPI_COMM_TYPE_HW_UNGUIDED`: split by host too.
const COMM_TYPE_HW_UNGUIDED: c_int = 222;

mpi! {
    /// Splits `comm` by the members' host (`MPI_COMM_TYPE_SHARED`, and
    /// `MPI_COMM_TYPE_HW_UNGUIDED`: a host is the level onesided knows),
    /// ranked by `key` then rank (collective); `MPI_UNDEFINED` gets
    /// `MPI_COMM_NULL`. A member's color is the lowest rank of its host.
    fn MPI_Comm_split_type / PMPI_Comm_split_type(
        comm: Handle,
        split_type: c_int,
        key: c_int,
        _info: Handle,
        newcomm: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let color = match split_type {
                abi::UNDEFINED => abi::UNDEFINED,
                abi::COMM_TYPE_SHARED | COMM_TYPE_HW_UNGUIDED => {
                    let host = |job: u32| runtime::with(|r| Ok(r.world.endpoint().ranks().host_of(job)));
                    let mine = host(c.group.job_rank(c.rank)?)?;
                    let first = (0..c.size())
                        .map(|r| Ok((r, host(c.group.job_rank(r)?)?)))
                        .collect::<Result<Vec<(u32, Option<u64>)>, Fail>>()?
                        .into_iter()
                        .find(|(_, h)| *h == mine)
                        .map_or(c.rank, |(r, _)| r);
                    first as c_int
                }
                _ => return Err(Fail::new(err::ARG, format!("split type {split_type}"))),
            };
            let handle = split(&c, color, key)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newcomm, handle, "newcomm") }
        });
        finish("MPI_Comm_split_type", comm, result)
    }
}

/// A communicator over group `g` of `comm`'s members (no message), or
/// `MPI_COMM_NULL` when this process is not in it.
fn over_group(c: &CommEntry, g: Handle) -> Result<Handle, Fail> {
    let members = group(g)?;
    if let Some(m) = members.iter().find(|m| !c.group.contains(**m)) {
        return Err(Fail::new(
            err::GROUP,
            format!("job rank {m} is not in the communicator"),
        ));
    }
    let me = job_rank()?;
    match members.contains(&me) {
        true => insert(Group::new(members)?, c.errhandler.load(Ordering::Relaxed)),
        false => Ok(abi::comm::NULL),
    }
}

mpi! {
    /// A communicator over `group` (a subset of `comm`'s; collective over
    /// `comm`, no message); `MPI_COMM_NULL` outside it.
    fn MPI_Comm_create / PMPI_Comm_create(comm: Handle, group: Handle, newcomm: *mut Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let handle = over_group(&c, group)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newcomm, handle, "newcomm") }
        });
        finish("MPI_Comm_create", comm, result)
    }
}

mpi! {
    /// A communicator over `group` (called by its members alone; no
    /// message).
    fn MPI_Comm_create_group / PMPI_Comm_create_group(
        comm: Handle,
        group: Handle,
        _tag: c_int,
        newcomm: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let handle = over_group(&c, group)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newcomm, handle, "newcomm") }
        });
        finish("MPI_Comm_create_group", comm, result)
    }
}

mpi! {
    /// Whether `comm` is an intercommunicator: never here.
    fn MPI_Comm_test_inter / PMPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int {
        let result = runtime::comm(comm).and_then(|_| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, 0, "flag") }
        });
        finish("MPI_Comm_test_inter", comm, result)
    }
}

mpi! {
    /// Raises `errorcode` on `comm`'s error handler.
    fn MPI_Comm_call_errhandler / PMPI_Comm_call_errhandler(comm: Handle, errorcode: c_int) -> c_int {
        let fail = Fail::new(errorcode, "called by the program");
        match runtime::comm(comm) {
            Ok(_) => {
                crate::errors::raise("MPI_Comm_call_errhandler", comm, fail);
                err::SUCCESS
            }
            Err(e) => finish("MPI_Comm_call_errhandler", comm, Err(e)),
        }
    }
}

mpi! {
    /// Splits `comm` by `color`, ranked by `key` then rank (collective);
    /// `MPI_UNDEFINED` gets `MPI_COMM_NULL`.
    fn MPI_Comm_split / PMPI_Comm_split(
        comm: Handle,
        color: c_int,
        key: c_int,
        newcomm: *mut Handle,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            if color < 0 && color != abi::UNDEFINED {
                return Err(Fail::new(err::ARG, format!("color {color}")));
            }
            let handle = split(&c, color, key)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newcomm, handle, "newcomm") }
        });
        finish("MPI_Comm_split", comm, result)
    }
}

/// How two member lists compare: the same list (`MPI_IDENT` for groups,
/// or `MPI_CONGRUENT` for distinct communicators), the same members in
/// another order (`MPI_SIMILAR`), or not (`MPI_UNEQUAL`).
pub(crate) fn compare_members(a: &[u32], b: &[u32], same_object: bool) -> c_int {
    if same_object {
        return compare::IDENT;
    }
    if a == b {
        return compare::CONGRUENT;
    }
    let (mut x, mut y) = (a.to_vec(), b.to_vec());
    x.sort_unstable();
    y.sort_unstable();
    match x == y {
        true => compare::SIMILAR,
        false => compare::UNEQUAL,
    }
}

mpi! {
    /// Compares two communicators.
    fn MPI_Comm_compare / PMPI_Comm_compare(comm1: Handle, comm2: Handle, result: *mut c_int) -> c_int {
        let got = runtime::comm(comm1).and_then(|a| {
            let b = runtime::comm(comm2)?;
            let how = compare_members(a.group.members(), b.group.members(), comm1 == comm2);
            // SAFETY: as the call's contract.
            unsafe { ptr::write(result, how, "result") }
        });
        finish("MPI_Comm_compare", comm1, got)
    }
}

mpi! {
    /// Sets the error handler of `comm`.
    fn MPI_Comm_set_errhandler / PMPI_Comm_set_errhandler(comm: Handle, errhandler: Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            runtime::with(|r| match r.errhandlers.get(errhandler) {
                Some(_) => Ok(()),
                None => Err(Fail::new(err::ERRHANDLER, format!("invalid error handler {errhandler:#x}"))),
            })?;
            c.errhandler.store(errhandler, Ordering::Relaxed);
            Ok(())
        });
        finish("MPI_Comm_set_errhandler", comm, result)
    }
}

mpi! {
    /// The error handler of `comm`.
    fn MPI_Comm_get_errhandler / PMPI_Comm_get_errhandler(comm: Handle, errhandler: *mut Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(errhandler, c.errhandler.load(Ordering::Relaxed), "errhandler") }
        });
        finish("MPI_Comm_get_errhandler", comm, result)
    }
}

mpi! {
    /// An error handler calling `function`.
    fn MPI_Comm_create_errhandler / PMPI_Comm_create_errhandler(
        function: Option<UserHandler>,
        errhandler: *mut Handle,
    ) -> c_int {
        let result = match function {
            None => Err(Fail::new(err::ARG, "the handler function is NULL")),
            Some(f) => runtime::with(|r| Ok(r.errhandlers.insert(Errhandler::User(f))))
                // SAFETY: as the call's contract.
                .and_then(|h| unsafe { ptr::write(errhandler, h, "errhandler") }),
        };
        finish("MPI_Comm_create_errhandler", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Frees an error handler (communicators keep using it); the handle
    /// becomes `MPI_ERRHANDLER_NULL`.
    fn MPI_Errhandler_free / PMPI_Errhandler_free(errhandler: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(errhandler, "errhandler") }.and_then(|h| {
            runtime::with(|r| match r.errhandlers.get(h) {
                Some(_) => Ok(()),
                None => Err(Fail::new(err::ERRHANDLER, format!("invalid error handler {h:#x}"))),
            })?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(errhandler, abi::errhandler::NULL, "errhandler") }
        });
        finish("MPI_Errhandler_free", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The group of `comm`.
    fn MPI_Comm_group / PMPI_Comm_group(comm: Handle, group: *mut Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let members = c.group.members().to_vec();
            let handle = runtime::with(|r| Ok(r.groups.insert(members)))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(group, handle, "group") }
        });
        finish("MPI_Comm_group", comm, result)
    }
}

/// Group `handle`: its members' job ranks, in group order.
fn group(handle: Handle) -> Result<Vec<u32>, Fail> {
    runtime::with(|r| {
        (r.groups.get(handle).cloned())
            .ok_or_else(|| Fail::new(err::GROUP, format!("invalid group {handle:#x}")))
    })
}

/// The rank of job rank `job` in `members`, or `MPI_UNDEFINED`.
fn position(members: &[u32], job: u32) -> c_int {
    (members.iter().position(|&m| m == job)).map_or(abi::UNDEFINED, |r| r as c_int)
}

/// This process's job rank.
fn job_rank() -> Result<u32, Fail> {
    runtime::with(|r| Ok(r.world.rank()))
}

mpi! {
    /// The size of a group.
    fn MPI_Group_size / PMPI_Group_size(g: Handle, size: *mut c_int) -> c_int {
        let result = group(g).and_then(|g| {
            // SAFETY: as the call's contract.
            unsafe { ptr::write(size, g.len() as c_int, "size") }
        });
        finish("MPI_Group_size", abi::comm::WORLD, result)
    }
}

mpi! {
    /// This process's rank in a group, or `MPI_UNDEFINED`.
    fn MPI_Group_rank / PMPI_Group_rank(g: Handle, rank: *mut c_int) -> c_int {
        let result = group(g).and_then(|g| {
            let me = job_rank()?;
            let r = position(&g, me);
            // SAFETY: as the call's contract.
            unsafe { ptr::write(rank, r, "rank") }
        });
        finish("MPI_Group_rank", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Frees a group; the handle becomes `MPI_GROUP_NULL`.
    fn MPI_Group_free / PMPI_Group_free(g: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(g, "group") }.and_then(|h| {
            if h != abi::group::EMPTY {
                runtime::with(|r| {
                    (r.groups.remove(h).map(drop))
                        .ok_or_else(|| Fail::new(err::GROUP, format!("invalid group {h:#x}")))
                })?;
            }
            // SAFETY: as the call's contract.
            unsafe { ptr::write(g, abi::group::NULL, "group") }
        });
        finish("MPI_Group_free", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The group of members `ranks` of `g`, in that order.
    fn MPI_Group_incl / PMPI_Group_incl(g: Handle, n: c_int, ranks: *const c_int, newgroup: *mut Handle) -> c_int {
        let result = group(g).and_then(|g| {
            let n = usize::try_from(n).map_err(|_| Fail::new(err::ARG, format!("n {n}")))?;
            // SAFETY: as the call's contract (n ranks).
            let ranks = unsafe { ptr::slice(ranks, n, "ranks") }?;
            let members = (ranks.iter())
                .map(|&r| {
                    (usize::try_from(r).ok())
                        .and_then(|r| g.get(r).copied())
                        .ok_or_else(|| Fail::new(err::RANK, format!("rank {r} of a group of {}", g.len())))
                })
                .collect::<Result<Vec<u32>, Fail>>()?;
            let mut seen = members.clone();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(Fail::new(err::RANK, "a rank named twice"));
            }
            let handle = runtime::with(|r| Ok(r.groups.insert(members)))?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(newgroup, handle, "newgroup") }
        });
        finish("MPI_Group_incl", abi::comm::WORLD, result)
    }
}

/// A new group of `members`.
///
/// # Safety
/// `out` is null or valid for a handle.
unsafe fn new_group(members: Vec<u32>, out: *mut Handle) -> Result<(), Fail> {
    let handle = match members.is_empty() {
        true => abi::group::EMPTY,
        false => runtime::with(|r| Ok(r.groups.insert(members)))?,
    };
    // SAFETY: as this function's contract.
    unsafe { ptr::write(out, handle, "newgroup") }
}

mpi! {
    /// The group of `g`'s members but `ranks`, in `g`'s order.
    fn MPI_Group_excl / PMPI_Group_excl(g: Handle, n: c_int, ranks: *const c_int, newgroup: *mut Handle) -> c_int {
        let result = group(g).and_then(|g| {
            let n = usize::try_from(n).map_err(|_| Fail::new(err::ARG, format!("n {n}")))?;
            // SAFETY: as the call's contract (n ranks).
            let ranks = unsafe { ptr::slice(ranks, n, "ranks") }?;
            let mut out = vec![true; g.len()];
            for &r in ranks {
                let at = (usize::try_from(r).ok())
                    .filter(|&r| r < g.len() && out[r])
                    .ok_or_else(|| Fail::new(err::RANK, format!("rank {r} of a group of {} (or named twice)", g.len())))?;
                out[at] = false;
            }
            let members = (g.iter().zip(out)).filter(|(_, keep)| *keep).map(|(m, _)| *m).collect();
            // SAFETY: as the call's contract.
            unsafe { new_group(members, newgroup) }
        });
        finish("MPI_Group_excl", abi::comm::WORLD, result)
    }
}

/// The set operations on groups: the first's members in its order, then
/// (union) the second's not in it.
#[derive(Clone, Copy)]
enum SetOp {
    Union,
    Intersection,
    Difference,
}

fn combine_groups(a: &[u32], b: &[u32], op: SetOp) -> Vec<u32> {
    match op {
        SetOp::Union => a
            .iter()
            .chain(b.iter().filter(|m| !a.contains(m)))
            .copied()
            .collect(),
        SetOp::Intersection => a.iter().filter(|m| b.contains(m)).copied().collect(),
        SetOp::Difference => a.iter().filter(|m| !b.contains(m)).copied().collect(),
    }
}

/// `op` of groups `g1` and `g2` into `newgroup`.
///
/// # Safety
/// `newgroup` is null or valid for a handle.
unsafe fn set_op(g1: Handle, g2: Handle, op: SetOp, newgroup: *mut Handle) -> Result<(), Fail> {
    let (a, b) = (group(g1)?, group(g2)?);
    // SAFETY: as this function's contract.
    unsafe { new_group(combine_groups(&a, &b, op), newgroup) }
}

mpi! {
    /// The members of either group.
    fn MPI_Group_union / PMPI_Group_union(g1: Handle, g2: Handle, newgroup: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { set_op(g1, g2, SetOp::Union, newgroup) };
        finish("MPI_Group_union", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The members of both groups, in the first's order.
    fn MPI_Group_intersection / PMPI_Group_intersection(g1: Handle, g2: Handle, newgroup: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { set_op(g1, g2, SetOp::Intersection, newgroup) };
        finish("MPI_Group_intersection", abi::comm::WORLD, result)
    }
}

mpi! {
    /// The members of the first group not in the second.
    fn MPI_Group_difference / PMPI_Group_difference(g1: Handle, g2: Handle, newgroup: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { set_op(g1, g2, SetOp::Difference, newgroup) };
        finish("MPI_Group_difference", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Compares two groups (`MPI_IDENT`, `MPI_SIMILAR`, `MPI_UNEQUAL`).
    fn MPI_Group_compare / PMPI_Group_compare(g1: Handle, g2: Handle, result: *mut c_int) -> c_int {
        let got = group(g1).and_then(|a| {
            let b = group(g2)?;
            let how = match compare_members(&a, &b, false) {
                compare::CONGRUENT => compare::IDENT,
                other => other,
            };
            // SAFETY: as the call's contract.
            unsafe { ptr::write(result, how, "result") }
        });
        finish("MPI_Group_compare", abi::comm::WORLD, got)
    }
}

mpi! {
    /// The ranks in `g2` of members `ranks1` of `g1` (`MPI_UNDEFINED`
    /// where absent).
    fn MPI_Group_translate_ranks / PMPI_Group_translate_ranks(
        g1: Handle,
        n: c_int,
        ranks1: *const c_int,
        g2: Handle,
        ranks2: *mut c_int,
    ) -> c_int {
        let result = group(g1).and_then(|a| {
            let b = group(g2)?;
            let n = usize::try_from(n).map_err(|_| Fail::new(err::ARG, format!("n {n}")))?;
            // SAFETY: as the call's contract (n ranks each).
            let from = unsafe { ptr::slice(ranks1, n, "ranks1") }?;
            // SAFETY: as the call's contract.
            let to = unsafe { ptr::slice_mut(ranks2, n, "ranks2") }?;
            for (f, t) in from.iter().zip(to.iter_mut()) {
                *t = match *f {
                    abi::PROC_NULL => abi::PROC_NULL,
                    r => {
                        let job = usize::try_from(r).ok().and_then(|r| a.get(r).copied());
                        let job = job.ok_or_else(|| Fail::new(err::RANK, format!("rank {r}")))?;
                        position(&b, job)
                    }
                };
            }
            Ok(())
        });
        finish("MPI_Group_translate_ranks", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Names a communicator.
    fn MPI_Comm_set_name / PMPI_Comm_set_name(comm: Handle, name: *const std::ffi::c_char) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            // SAFETY: a NUL-terminated string (the call's contract).
            let text = unsafe { ptr::read_name(name) }?;
            *c.name.lock().unwrap_or_else(|p| p.into_inner()) = text;
            Ok(())
        });
        finish("MPI_Comm_set_name", comm, result)
    }
}

mpi! {
    /// A communicator's name (`MPI_COMM_WORLD` and `MPI_COMM_SELF` for
    /// those, empty when none was set).
    fn MPI_Comm_get_name / PMPI_Comm_get_name(
        comm: Handle,
        name: *mut std::ffi::c_char,
        resultlen: *mut c_int,
    ) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            let text = c.name.lock().unwrap_or_else(|p| p.into_inner()).clone();
            // SAFETY: a buffer of MPI_MAX_OBJECT_NAME (the call's contract).
            unsafe { ptr::write_text(name, resultlen, &text, abi::MAX_OBJECT_NAME) }
        });
        finish("MPI_Comm_get_name", comm, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_ranks_by_key_then_rank() {
        let all = [(1, 5), (0, 0), (1, 5), (1, -1), (abi::UNDEFINED, 0)];
        assert_eq!(split_members(&all, 1), vec![3, 0, 2]);
        assert_eq!(split_members(&all, 0), vec![1]);
        assert!(split_members(&all, abi::UNDEFINED).is_empty());
    }

    #[test]
    fn set_operations_keep_the_first_groups_order() {
        let (a, b) = ([3, 1, 2], [2, 5, 3]);
        assert_eq!(combine_groups(&a, &b, SetOp::Union), vec![3, 1, 2, 5]);
        assert_eq!(combine_groups(&a, &b, SetOp::Intersection), vec![3, 2]);
        assert_eq!(combine_groups(&a, &b, SetOp::Difference), vec![1]);
    }

    #[test]
    fn comparisons_follow_the_standard() {
        assert_eq!(compare_members(&[0, 1], &[0, 1], true), compare::IDENT);
        assert_eq!(compare_members(&[0, 1], &[0, 1], false), compare::CONGRUENT);
        assert_eq!(compare_members(&[0, 1], &[1, 0], false), compare::SIMILAR);
        assert_eq!(compare_members(&[0, 1], &[0, 2], false), compare::UNEQUAL);
    }
}
