//! Dynamic windows: `MPI_Win_create_dynamic`, `MPI_Win_attach` and
//! `MPI_Win_detach` over onesided's dynamic windows. MPI addresses an
//! attachment by its address in the target process (`MPI_Get_address`),
//! onesided by the displacement `attach` returned; so each process
//! keeps a table of its attachments (address, length, displacement) per
//! window, which it serves to peers (a control-plane service answered by
//! the progress engine, so a passive target need not call MPI), and an
//! origin keeps each target's table, asked for on the first access to an
//! address it does not hold (again after an attachment it does not know
//! yet). Cost in p: one call per origin-target pair that accesses, and
//! one more per new attachment accessed; nothing at attach; the service
//! is served from the process's first dynamic window on (the control
//! plane's receives for one more service).

use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use onesided::fabric::fnv::FastMap;
use onesided::fabric::{Access, Endpoint};

use super::{open, Layout, WinEntry, FLAVOR_DYNAMIC};
use crate::abi::{err, Aint, Handle};
use crate::errors::{finish, finish_win, Fail};
use crate::{mpi, runtime};

/// The control-plane service that answers for a process's attachments.
const ATTACHMENTS: u16 = 0x0301;
/// Bytes of one attachment in a reply.
const ENTRY: usize = 24;
/// The most attachments a reply lists (onesided's dynamic windows hold
/// at most 1000 at once).
const MOST: usize = 1000;

/// An attachment: the program's address and length, and onesided's
/// displacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attached {
    address: u64,
    len: u64,
    disp: u64,
}

/// This process's attachments, by window context.
static MINE: Mutex<Option<FastMap<u64, Vec<Attached>>>> = Mutex::new(None);

fn mine() -> MutexGuard<'static, Option<FastMap<u64, Vec<Attached>>>> {
    MINE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The attachment of `table` holding `len` bytes at `address`, as
/// onesided's displacement.
pub(crate) fn translate(table: &[Attached], address: u64, len: u64) -> Option<u64> {
    table
        .iter()
        .find(|a| address >= a.address && address.saturating_add(len) <= a.address + a.len)
        .map(|a| a.disp + (address - a.address))
}

/// Starts answering peers' questions about this process's attachments,
/// at the first dynamic window (a peer asks only after this process
/// attached what it asks about, so after its first window). The handler
/// takes the table's lock, never the endpoint's: nothing holds the
/// table's lock while calling the endpoint.
///
/// # Errors
/// The endpoint's.
fn serve(ep: &Endpoint) -> Result<(), Fail> {
    {
        let mut table = mine();
        if table.is_some() {
            return Ok(());
        }
        *table = Some(FastMap::default());
    }
    ep.serve(ATTACHMENTS, |_, request, _| {
        let ctx = request
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes);
        let guard = mine();
        let list = ctx.and_then(|c| guard.as_ref()?.get(&c));
        let mut reply = Vec::new();
        for a in list.into_iter().flatten().take(MOST) {
            reply.extend_from_slice(&a.address.to_le_bytes());
            reply.extend_from_slice(&a.len.to_le_bytes());
            reply.extend_from_slice(&a.disp.to_le_bytes());
        }
        reply
    })?;
    Ok(())
}

impl WinEntry {
    /// The displacement in onesided's window of `len` bytes at `address`
    /// of window rank `target`'s attachments.
    ///
    /// # Errors
    /// `MPI_ERR_RMA_RANGE` when no attachment of the target holds them.
    pub(super) fn attached_at(&self, target: u32, address: u64, len: u64) -> Result<u64, Fail> {
        if target == self.rank {
            let guard = mine();
            let table = guard.as_ref().and_then(|m| m.get(&self.ctx));
            return (table.and_then(|t| translate(t, address, len)))
                .ok_or_else(|| outside(target, address, len));
        }
        if let Some(disp) = self
            .peers_lock()
            .get(&target)
            .and_then(|t| translate(t, address, len))
        {
            return Ok(disp);
        }
        let table = self.ask(target)?;
        let found = translate(&table, address, len);
        self.peers_lock().insert(target, table);
        found.ok_or_else(|| outside(target, address, len))
    }

    fn peers_lock(&self) -> MutexGuard<'_, FastMap<u32, Vec<Attached>>> {
        self.attachments.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Window rank `target`'s attachments, asked of it.
    fn ask(&self, target: u32) -> Result<Vec<Attached>, Fail> {
        let ep = runtime::with(|r| Ok(r.world.endpoint().clone()))?;
        let mut reply = vec![0u8; MOST * ENTRY];
        let job = self.members[target as usize];
        let len = ep.call(job, ATTACHMENTS, &self.ctx.to_le_bytes(), &mut reply)?;
        let word =
            |c: &[u8], i: usize| u64::from_le_bytes(c[i..i + 8].try_into().unwrap_or_default());
        Ok(reply[..len]
            .chunks_exact(ENTRY)
            .map(|c| Attached {
                address: word(c, 0),
                len: word(c, 8),
                disp: word(c, 16),
            })
            .collect())
    }
}

/// The failure of an access to bytes no attachment holds.
fn outside(target: u32, address: u64, len: u64) -> Fail {
    let what = format!("{len} bytes at {address:#x}, which rank {target} has not attached");
    Fail::new(err::RMA_RANGE, what)
}

/// Forgets this process's attachments to the window of context `ctx`
/// (freed).
pub(super) fn forget(ctx: u64) {
    if let Some(m) = mine().as_mut() {
        m.remove(&ctx);
    }
}

mpi! {
    /// Makes a window over `comm` with no memory; the members attach
    /// theirs (collective: the displacement units are gathered).
    fn MPI_Win_create_dynamic / PMPI_Win_create_dynamic(_info: Handle, comm: Handle, win: *mut Handle) -> c_int {
        let result = runtime::comm(comm).and_then(|c| {
            serve(&runtime::with(|r| Ok(r.world.endpoint().clone()))?)?;
            let layout = Layout { size: 0, disp_unit: 1, flavor: FLAVOR_DYNAMIC };
            let make = |rma: &onesided::Rma| Ok((rma.create_dynamic(&c.objects)?, 0, 0));
            // SAFETY: as the call's contract.
            unsafe { open(&c, layout, win, make) }?;
            Ok(())
        });
        finish("MPI_Win_create_dynamic", comm, result)
    }
}

mpi! {
    /// Attaches `size` bytes of the program's memory at `base` to a
    /// dynamic window: peers reach them at their address.
    fn MPI_Win_attach / PMPI_Win_attach(win: Handle, base: *mut c_void, size: Aint) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            if w.flavor != FLAVOR_DYNAMIC {
                return Err(Fail::new(err::RMA_FLAVOR, "attach to a window that is not dynamic"));
            }
            let len = usize::try_from(size).map_err(|_| Fail::new(err::SIZE, format!("size {size}")))?;
            if base.is_null() && len > 0 {
                return Err(Fail::new(err::BUFFER, "base is NULL"));
            }
            let ep = runtime::with(|r| Ok(r.world.endpoint().clone()))?;
            let access = Access::REMOTE_READ | Access::REMOTE_WRITE;
            // SAFETY: the program's memory, valid while attached (MPI's
            // rule: detached, or the window freed, before it is freed).
            let region = unsafe { ep.register_external((base.cast(), len), access) }?;
            let disp = w.with(|s| Ok(s.window().attach(Arc::new(region))?))?;
            let entry = Attached { address: base as u64, len: len as u64, disp };
            if let Some(m) = mine().as_mut() {
                m.entry(w.ctx).or_default().push(entry);
            }
            Ok(())
        });
        finish_win("MPI_Win_attach", win, result)
    }
}

mpi! {
    /// Detaches the memory attached at `base`.
    fn MPI_Win_detach / PMPI_Win_detach(win: Handle, base: *const c_void) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let address = base as u64;
            let entry = mine().as_mut().and_then(|m| {
                let list = m.get_mut(&w.ctx)?;
                let at = list.iter().position(|a| a.address == address)?;
                Some(list.remove(at))
            });
            let entry = entry.ok_or_else(|| Fail::new(err::RMA_RANGE, format!("nothing is attached at {address:#x}")))?;
            let region = w.with(|s| Ok(s.window().detach(entry.disp)?))?;
            drop(region);
            Ok(())
        });
        finish_win("MPI_Win_detach", win, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_translates_inside_its_attachment_only() {
        let table = [
            Attached {
                address: 0x1000,
                len: 64,
                disp: 1 << 40,
            },
            Attached {
                address: 0x8000,
                len: 8,
                disp: 2 << 40,
            },
        ];
        assert_eq!(translate(&table, 0x1000, 64), Some(1 << 40));
        assert_eq!(translate(&table, 0x1010, 8), Some((1 << 40) + 16));
        assert_eq!(translate(&table, 0x1038, 16), None);
        assert_eq!(translate(&table, 0x8000, 8), Some(2 << 40));
        assert_eq!(translate(&table, 0x7fff, 1), None);
    }
}
