//! Accesses: `MPI_Put`, `MPI_Get` (derived datatypes too: packed at
//! the origin, one access per run at the target), the accumulates and
//! atomics (`Accumulate`, `Get_accumulate`, `Fetch_and_op`,
//! `Compare_and_swap`), and their request-based forms, which onesided
//! completes within the call. Each finds the epoch that covers its
//! target.

use super::*;

/// The bytes an access moves when both its datatypes are contiguous
/// (they must match); `None` when one is not (the access goes run by
/// run).
fn dense(
    (ocount, otype): (c_int, Handle),
    (tcount, ttype): (c_int, Handle),
) -> Result<Option<usize>, Fail> {
    let (Some(osize), Some(tsize)) = (datatype::dense_size(otype)?, datatype::dense_size(ttype)?)
    else {
        return Ok(None);
    };
    let (origin, target) = (
        datatype::times(ocount, osize)?,
        datatype::times(tcount, tsize)?,
    );
    match origin == target {
        true => Ok(Some(origin)),
        false => Err(Fail::new(
            err::TYPE,
            format!("{origin} origin bytes for {target} at the target"),
        )),
    }
}

/// The bytes of an access at the target, in type-map order: runs of
/// `(offset, len)` from byte `offset` for `count` elements of
/// `datatype`, checked against `target`'s part (nothing moves when one
/// lies outside it).
fn target_runs(
    w: &WinEntry,
    (target, offset): (u32, u64),
    (count, datatype): (c_int, Handle),
) -> Result<Vec<(u64, usize)>, Fail> {
    let map = derived::committed(datatype)?;
    let n = usize::try_from(count).map_err(|_| Fail::new(err::COUNT, format!("count {count}")))?;
    let mut runs = Vec::with_capacity(map.runs.len() * n);
    let (base, size) = (
        w.bases[target as usize] as i128,
        w.sizes[target as usize] as i128,
    );
    // A dynamic window's attachments are checked by onesided.
    let checked = w.flavor != FLAVOR_DYNAMIC;
    for i in 0..n {
        for run in &map.runs {
            let at = offset as i128 + i as i128 * map.extent() as i128 + run.at as i128;
            if checked && (at < base || at + run.len as i128 > base + size) {
                let what = format!(
                    "{} bytes at {} of rank {target}'s {size}",
                    run.len,
                    at - base
                );
                return Err(Fail::new(err::RMA_RANGE, what));
            }
            runs.push((at as u64, run.len));
        }
    }
    Ok(runs)
}

/// An access whose datatypes are not both contiguous: the origin packed
/// (`MPI_Put`) or unpacked (`MPI_Get`), one access per run at the target.
///
/// # Safety
/// The origin buffer is valid for its elements (for writes when `put`
/// is false).
unsafe fn scattered(
    w: &WinEntry,
    (origin, ocount, otype): (*mut c_void, c_int, Handle),
    (target_rank, target_disp, tcount, ttype): (c_int, Aint, c_int, Handle),
    put: bool,
) -> Result<(), Fail> {
    let omap = derived::committed(otype)?;
    let on =
        usize::try_from(ocount).map_err(|_| Fail::new(err::COUNT, format!("count {ocount}")))?;
    let origin_bytes = derived::bytes_of(&omap, on)?;
    let Some(at) = w.target(target_rank, target_disp)? else {
        return Ok(());
    };
    let runs = target_runs(w, at, (tcount, ttype))?;
    let total: usize = runs.iter().map(|r| r.1).sum();
    if total != origin_bytes {
        let what = format!("{origin_bytes} origin bytes for {total} at the target");
        return Err(Fail::new(err::TYPE, what));
    }
    let target = at.0;
    let mut data = match put {
        // SAFETY: as this function's contract.
        true => unsafe { derived::pack(&omap, origin.cast(), on) },
        false => vec![0u8; total],
    };
    w.with(|s| {
        let mut from = 0;
        for &(offset, len) in &runs {
            let part = &mut data[from..from + len];
            match put {
                true => on_epoch!(s.covering(target)?, e => e.put(target, offset, &*part))?,
                false => on_epoch!(s.covering(target)?, e => e.get(target, offset, part))?,
            }
            from += len;
        }
        Ok(())
    })?;
    if !put {
        // SAFETY: as this function's contract.
        unsafe { derived::unpack(&omap, &data, origin.cast(), on) };
    }
    Ok(())
}

/// An accumulate whose datatypes are not both contiguous but are made
/// of one predefined element (MPI allows no other with a predefined
/// operation): the origin packed, one accumulate per run at the target,
/// every run range-checked first.
///
/// # Safety
/// The origin buffer is valid for its elements.
unsafe fn accumulate_scattered(
    w: &WinEntry,
    (origin, ocount, otype): (*const c_void, c_int, Handle),
    (target_rank, target_disp, tcount, ttype): (c_int, Aint, c_int, Handle),
    op: Handle,
) -> Result<(), Fail> {
    let (omap, tmap) = (derived::committed(otype)?, derived::committed(ttype)?);
    let element = match (omap.element, tmap.element) {
        (Some(o), Some(t)) if o == t => o.0,
        _ => {
            let what = "an accumulate of datatypes not made of one and the same predefined element";
            return Err(Fail::new(err::TYPE, what));
        }
    };
    let on =
        usize::try_from(ocount).map_err(|_| Fail::new(err::COUNT, format!("count {ocount}")))?;
    let origin_bytes = derived::bytes_of(&omap, on)?;
    let Some(at) = w.target(target_rank, target_disp)? else {
        return Ok(());
    };
    let runs = target_runs(w, at, (tcount, ttype))?;
    let total: usize = runs.iter().map(|r| r.1).sum();
    if total != origin_bytes {
        let what = format!("{origin_bytes} origin bytes for {total} at the target");
        return Err(Fail::new(err::TYPE, what));
    }
    // SAFETY: as this function's contract.
    let data = unsafe { derived::pack(&omap, origin.cast(), on) };
    let target = at.0;
    w.with(|s| {
        let access = s.covering(target)?;
        by_element!(element, T => {
            let op = atomic_op::<T>(op)?;
            let mut values = vec![<T as bytemuck::Zeroable>::zeroed(); data.len() / size_of::<T>()];
            bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(&data);
            let mut from = 0;
            for &(offset, len) in &runs {
                let n = len / size_of::<T>();
                let part = &values[from..from + n];
                on_epoch!(access, e => e.accumulate(target, offset, part, op.clone()))?;
                from += n;
            }
            Ok(())
        }, Err(Fail::new(err::TYPE, format!("accumulates on datatype {otype:#x}"))))
    })
}

/// `MPI_Get_accumulate` whose datatypes are not all contiguous (each
/// made of one and the same predefined element): the origin packed, each
/// element of each run at the target fetched and combined atomically, the
/// old elements unpacked into the result buffer; every run range-checked
/// before any moves.
///
/// # Safety
/// The origin buffer is valid for its elements (unless `op` is
/// `MPI_NO_OP`), the result buffer for writing its elements.
unsafe fn get_accumulate_scattered(
    w: &WinEntry,
    (origin, ocount, otype): (*const c_void, c_int, Handle),
    (result, rcount, rtype): (*mut c_void, c_int, Handle),
    (target_rank, target_disp, tcount, ttype): (c_int, Aint, c_int, Handle),
    op: Handle,
) -> Result<(), Fail> {
    let combines = op != abi::op::NO_OP;
    let (rmap, tmap) = (derived::committed(rtype)?, derived::committed(ttype)?);
    let omap = match combines {
        true => Some(derived::committed(otype)?),
        false => None,
    };
    let element = match (rmap.element, tmap.element) {
        (Some(r), Some(t)) if r == t && omap.as_ref().is_none_or(|o| o.element == Some(t)) => t.0,
        _ => {
            let what = "an accumulate of datatypes not made of one and the same predefined element";
            return Err(Fail::new(err::TYPE, what));
        }
    };
    let count =
        |n: c_int| usize::try_from(n).map_err(|_| Fail::new(err::COUNT, format!("count {n}")));
    let (on, rn) = (count(ocount)?, count(rcount)?);
    let result_bytes = derived::bytes_of(&rmap, rn)?;
    let Some(at) = w.target(target_rank, target_disp)? else {
        return Ok(());
    };
    let runs = target_runs(w, at, (tcount, ttype))?;
    let total: usize = runs.iter().map(|r| r.1).sum();
    let origin_bytes = match &omap {
        Some(omap) => derived::bytes_of(omap, on)?,
        None => total,
    };
    if total != result_bytes || total != origin_bytes {
        let what = format!(
            "{origin_bytes} origin and {result_bytes} result bytes for {total} at the target"
        );
        return Err(Fail::new(err::TYPE, what));
    }
    let data = match &omap {
        // SAFETY: as this function's contract.
        Some(omap) => unsafe { derived::pack(omap, origin.cast(), on) },
        None => Vec::new(),
    };
    let target = at.0;
    let old = w.with(|s| {
        let access = s.covering(target)?;
        by_element!(element, T => {
            let op = atomic_op::<T>(op)?;
            let size = size_of::<T>();
            let mut values = vec![<T as bytemuck::Zeroable>::zeroed(); data.len() / size];
            bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(&data);
            let mut old = Vec::with_capacity(total / size);
            for &(offset, len) in &runs {
                for k in 0..len / size {
                    let v = values.get(old.len()).copied().unwrap_or_else(<T as bytemuck::Zeroable>::zeroed);
                    let at = offset + (k * size) as u64;
                    old.push(on_epoch!(access, e => e.fetch_and_op(target, at, v, op.clone()))?);
                }
            }
            Ok(bytemuck::cast_slice::<T, u8>(&old).to_vec())
        }, Err(Fail::new(err::TYPE, format!("accumulates on datatype {ttype:#x}"))))
    })?;
    // SAFETY: as this function's contract.
    unsafe { derived::unpack(&rmap, &old, result.cast(), rn) };
    Ok(())
}

mpi! {
    /// Writes the origin buffer at displacement `target_disp` of rank
    /// `target_rank`.
    fn MPI_Put / PMPI_Put(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some(len) = dense((origin_count, origin_datatype), (target_count, target_datatype))?
            else {
                let origin = (origin_addr.cast_mut(), origin_count, origin_datatype);
                let target = (target_rank, target_disp, target_count, target_datatype);
                // SAFETY: as the call's contract.
                return unsafe { scattered(&w, origin, target, true) };
            };
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            // SAFETY: origin_count elements at origin_addr (the call's contract).
            let data = unsafe { ptr::slice(origin_addr.cast::<u8>(), len, "origin_addr") }?;
            w.with(|s| Ok(on_epoch!(s.covering(target)?, e => e.put(target, offset, data))?))
        });
        finish_win("MPI_Put", win, result)
    }
}

mpi! {
    /// Reads from displacement `target_disp` of rank `target_rank` into
    /// the origin buffer (complete at the epoch's end or a flush).
    fn MPI_Get / PMPI_Get(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some(len) = dense((origin_count, origin_datatype), (target_count, target_datatype))?
            else {
                let origin = (origin_addr, origin_count, origin_datatype);
                let target = (target_rank, target_disp, target_count, target_datatype);
                // SAFETY: as the call's contract.
                return unsafe { scattered(&w, origin, target, false) };
            };
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            // SAFETY: origin_count elements at origin_addr (the call's contract).
            let buf = unsafe { ptr::slice_mut(origin_addr.cast::<u8>(), len, "origin_addr") }?;
            w.with(|s| Ok(on_epoch!(s.covering(target)?, e => e.get(target, offset, buf))?))
        });
        finish_win("MPI_Get", win, result)
    }
}

/// `op` as an atomic operation of onesided.
fn atomic_op<T>(op: Handle) -> Result<Op<T>, Fail> {
    Ok(match op {
        abi::op::SUM => Op::SUM,
        abi::op::MIN => Op::MIN,
        abi::op::MAX => Op::MAX,
        abi::op::REPLACE => Op::REPLACE,
        abi::op::NO_OP => Op::NO_OP,
        _ => {
            return Err(Fail::new(
                err::OP,
                format!("operation {op:#x} in an accumulate (onesided's atomics take SUM, MIN, MAX, REPLACE and NO_OP)"),
            ))
        }
    })
}

/// An accumulate's buffers and operation.
#[derive(Clone, Copy)]
struct Atomic {
    origin: *const c_void,
    result: *mut c_void,
    count: usize,
    target: u32,
    offset: u64,
    op: Handle,
}

/// The accesses an atomic call makes, on elements of `T`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AtomicKind {
    Accumulate,
    Fetch,
}

/// Runs atomic `a` of `kind` on `access` with elements of `T`.
///
/// # Safety
/// `a`'s origin and result buffers are valid for `count` elements of
/// `T` where the kind uses them.
unsafe fn atomic_as<T: Element>(
    access: Access<'_>,
    a: &Atomic,
    kind: AtomicKind,
) -> Result<(), Fail> {
    let size = size_of::<T>() as u64;
    match kind {
        AtomicKind::Accumulate => {
            // SAFETY: as this function's contract.
            let values = unsafe { ptr::slice(a.origin.cast::<T>(), a.count, "origin_addr") }?;
            let op = atomic_op::<T>(a.op)?;
            on_epoch!(access, e => e.accumulate(a.target, a.offset, values, op))?;
        }
        AtomicKind::Fetch => {
            // SAFETY: as this function's contract (NO_OP reads no origin).
            let values = match a.op {
                abi::op::NO_OP => None,
                _ => Some(unsafe { ptr::slice(a.origin.cast::<T>(), a.count, "origin_addr") }?),
            };
            // SAFETY: as this function's contract.
            let out = unsafe { ptr::slice_mut(a.result.cast::<T>(), a.count, "result_addr") }?;
            let op = atomic_op::<T>(a.op)?;
            for (i, o) in out.iter_mut().enumerate() {
                let v = values.map_or(T::zeroed(), |v| v[i]);
                let at = a.offset + i as u64 * size;
                *o = on_epoch!(access, e => e.fetch_and_op(a.target, at, v, op.clone()))?;
            }
        }
    }
    Ok(())
}

/// Runs atomic `a` of `kind` on window `w` for `datatype`.
///
/// # Safety
/// As [`atomic_as`], for the datatype's elements.
unsafe fn atomic(w: &WinEntry, a: &Atomic, kind: AtomicKind, datatype: Handle) -> Result<(), Fail> {
    let (per, _, element) = datatype::reducible(datatype)?;
    let count = (a.count.checked_mul(per))
        .ok_or_else(|| Fail::new(err::COUNT, format!("count {}", a.count)))?;
    let a = &Atomic { count, ..*a };
    w.with(|s| {
        let access = s.covering(a.target)?;
        // SAFETY: as this function's contract, for the datatype's Rust type.
        unsafe {
            by_element!(element, T => atomic_as::<T>(access, a, kind), Err(Fail::new(err::TYPE, format!("atomics on datatype {datatype:#x}"))))
        }
    })
}

/// What a single-element atomic does.
#[derive(Clone, Copy)]
enum Single {
    /// `MPI_Fetch_and_op` by this operation.
    Fetch(Handle),
    /// `MPI_Compare_and_swap` with the element here.
    Swap(*const c_void),
}

/// `MPI_Fetch_and_op` or `MPI_Compare_and_swap`: one element of
/// predefined `datatype` (MPI allows no other) at `offset` of `target`,
/// its old value to the result buffer. Its own path, the shortest from
/// the call to onesided's epoch.
///
/// # Safety
/// The origin (unless `MPI_NO_OP` is the operation), result and compare
/// buffers hold one element each.
unsafe fn single(
    w: &WinEntry,
    (target, offset): (u32, u64),
    datatype: Handle,
    (origin, result): (*const c_void, *mut c_void),
    what: Single,
) -> Result<(), Fail> {
    let Some((_, element)) = datatype::predefined(datatype) else {
        let what =
            format!("datatype {datatype:#x} in a single-element atomic (predefined ones only)");
        return Err(Fail::new(err::TYPE, what));
    };
    w.with(|s| {
        let access = s.covering(target)?;
        // SAFETY: as this function's contract, for the datatype's Rust type.
        unsafe {
            by_element!(element, T => single_as::<T>(access, (target, offset), (origin, result), what), Err(Fail::new(err::TYPE, format!("atomics on datatype {datatype:#x}"))))
        }
    })
}

/// [`single`] on an element of `T`.
///
/// # Safety
/// As [`single`], for elements of `T`.
unsafe fn single_as<T: Element>(
    access: Access<'_>,
    (target, offset): (u32, u64),
    (origin, result): (*const c_void, *mut c_void),
    what: Single,
) -> Result<(), Fail> {
    let old = match what {
        Single::Fetch(op) => {
            let value = match op {
                abi::op::NO_OP => T::zeroed(),
                // SAFETY: as this function's contract.
                _ => unsafe { ptr::read(origin.cast::<T>(), "origin_addr") }?,
            };
            let op = atomic_op::<T>(op)?;
            on_epoch!(access, e => e.fetch_and_op(target, offset, value, op))?
        }
        Single::Swap(compare) => {
            // SAFETY: as this function's contract.
            let new = unsafe { ptr::read(origin.cast::<T>(), "origin_addr") }?;
            // SAFETY: as above.
            let compare = unsafe { ptr::read(compare.cast::<T>(), "compare_addr") }?;
            on_epoch!(access, e => e.compare_and_swap(target, offset, compare, new))?
        }
    };
    // SAFETY: as this function's contract.
    unsafe { ptr::write(result.cast::<T>(), old, "result_addr") }
}

mpi! {
    /// Combines the origin buffer into the target's by `op`, element by
    /// element atomically.
    fn MPI_Accumulate / PMPI_Accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            if dense((origin_count, origin_datatype), (target_count, target_datatype))?.is_none() {
                let origin = (origin_addr, origin_count, origin_datatype);
                let target = (target_rank, target_disp, target_count, target_datatype);
                // SAFETY: as the call's contract.
                return unsafe { accumulate_scattered(&w, origin, target, op) };
            }
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let count = origin_count as usize;
            let a = Atomic { origin: origin_addr, result: std::ptr::null_mut(), count, target, offset, op };
            // SAFETY: origin_count elements at origin_addr (the call's contract).
            unsafe { atomic(&w, &a, AtomicKind::Accumulate, origin_datatype) }
        });
        finish_win("MPI_Accumulate", win, result)
    }
}

mpi! {
    /// Fetches the target's elements into the result buffer and combines
    /// the origin's into them by `op`, element by element atomically.
    fn MPI_Get_accumulate / PMPI_Get_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let results = dense((result_count, result_datatype), (target_count, target_datatype))?;
            let origins = match op {
                abi::op::NO_OP => Some(0),
                _ => dense((origin_count, origin_datatype), (target_count, target_datatype))?,
            };
            if results.is_none() || origins.is_none() {
                let origin = (origin_addr, origin_count, origin_datatype);
                let result = (result_addr, result_count, result_datatype);
                let target = (target_rank, target_disp, target_count, target_datatype);
                // SAFETY: as the call's contract.
                return unsafe { get_accumulate_scattered(&w, origin, result, target, op) };
            }
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let count = result_count as usize;
            let a = Atomic { origin: origin_addr, result: result_addr, count, target, offset, op };
            // SAFETY: the buffers hold their counts (the call's contract).
            unsafe { atomic(&w, &a, AtomicKind::Fetch, result_datatype) }
        });
        finish_win("MPI_Get_accumulate", win, result)
    }
}

mpi! {
    /// One element of `MPI_Get_accumulate`.
    fn MPI_Fetch_and_op / PMPI_Fetch_and_op(
        origin_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        op: Handle,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let buffers = (origin_addr, result_addr);
            // SAFETY: one element in each buffer (the call's contract).
            unsafe { single(&w, (target, offset), datatype, buffers, Single::Fetch(op)) }
        });
        finish_win("MPI_Fetch_and_op", win, result)
    }
}

mpi! {
    /// Replaces the target's element by the origin's when it equals the
    /// compare element; the old one goes to the result buffer.
    fn MPI_Compare_and_swap / PMPI_Compare_and_swap(
        origin_addr: *const c_void,
        compare_addr: *const c_void,
        result_addr: *mut c_void,
        datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        win: Handle,
    ) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let Some((target, offset)) = w.target(target_rank, target_disp)? else {
                return Ok(());
            };
            let buffers = (origin_addr, result_addr);
            // SAFETY: one element in each buffer (the call's contract).
            unsafe { single(&w, (target, offset), datatype, buffers, Single::Swap(compare_addr)) }
        });
        finish_win("MPI_Compare_and_swap", win, result)
    }
}

/// Ends a request-based access: `access` made it (an error code from
/// it is returned as it is), then `how` completes it, and the request
/// is complete from the start (onesided's accesses need no request:
/// MPI allows these only in passive-target epochs, where a flush does).
///
/// # Safety
/// `request` is null or valid for a handle.
unsafe fn completed(
    call: &str,
    (win, rank): (Handle, c_int),
    access: c_int,
    how: Flush,
    request: *mut Handle,
) -> c_int {
    if access != err::SUCCESS {
        return access;
    }
    let result = flush(win, Some(rank), how).and_then(|()| {
        let handle = crate::request::start(crate::request::Pending::done())?;
        // SAFETY: as this function's contract.
        unsafe { ptr::write(request, handle, "request") }
    });
    finish_win(call, win, result)
}

mpi! {
    /// `MPI_Put` with a request, complete once the origin buffer may be
    /// reused.
    fn MPI_Rput / PMPI_Rput(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe { PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win) };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Rput", (win, target_rank), access, Flush::Local, request) }
    }
}

mpi! {
    /// `MPI_Get` with a request, complete once the data arrived.
    fn MPI_Rget / PMPI_Rget(
        origin_addr: *mut c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe { PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win) };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Rget", (win, target_rank), access, Flush::Remote, request) }
    }
}

mpi! {
    /// `MPI_Accumulate` with a request, complete once the origin buffer
    /// may be reused.
    fn MPI_Raccumulate / PMPI_Raccumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe { PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win) };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Raccumulate", (win, target_rank), access, Flush::Local, request) }
    }
}

mpi! {
    /// `MPI_Get_accumulate` with a request, complete once the result
    /// arrived.
    fn MPI_Rget_accumulate / PMPI_Rget_accumulate(
        origin_addr: *const c_void,
        origin_count: c_int,
        origin_datatype: Handle,
        result_addr: *mut c_void,
        result_count: c_int,
        result_datatype: Handle,
        target_rank: c_int,
        target_disp: Aint,
        target_count: c_int,
        target_datatype: Handle,
        op: Handle,
        win: Handle,
        request: *mut Handle,
    ) -> c_int {
        // SAFETY: the call's contract, passed on.
        let access = unsafe {
            PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op, win)
        };
        // SAFETY: as the call's contract.
        unsafe { completed("MPI_Rget_accumulate", (win, target_rank), access, Flush::Remote, request) }
    }
}
