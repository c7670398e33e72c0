//! Generalized active target synchronization: `MPI_Win_post`, `start`,
//! `complete`, `wait` and `test`, by point-to-point notices on the
//! window's own context (as MPICH builds them on its messages).
//!
//! - `post(group)`: a notice to each origin of `group`, and a receive
//!   posted for each one's completion notice.
//! - `start(group)`: waits for each target's post notice, then opens a
//!   `lock_all` epoch with `MPI_MODE_NOCHECK` (no lock message) covering
//!   the group's targets.
//! - `complete`: closes that epoch (the accesses are done at the
//!   targets), then a notice to each target.
//! - `wait`/`test`: the completion notices of every origin.
//!
//! Cost in p: one message from each target to each origin of its group
//! and one back, per epoch; nothing to members outside the groups.

use std::ffi::c_int;

use onesided::rma::Assert;

use super::{assert_of, WinEntry};
use crate::abi::{err, Handle};
use crate::errors::{finish_win, Fail};
use crate::{mpi, p2p, ptr, runtime};

/// The tags of the notices.
const POSTED: i32 = 1;
const COMPLETED: i32 = 2;

impl WinEntry {
    /// The window ranks of the members of group `handle`.
    fn ranks_of(&self, handle: Handle) -> Result<Vec<u32>, Fail> {
        let jobs = runtime::with(|r| {
            (r.groups.get(handle).cloned())
                .ok_or_else(|| Fail::new(err::GROUP, format!("invalid group {handle:#x}")))
        })?;
        (jobs.iter())
            .map(|job| {
                let at = self.members.iter().position(|m| m == job);
                at.map(|r| r as u32).ok_or_else(|| {
                    Fail::new(err::GROUP, format!("job rank {job} is not in the window"))
                })
            })
            .collect()
    }

    /// Sends a notice with `tag` to each window rank of `ranks`.
    fn notify(&self, ranks: &[u32], tag: i32) -> Result<(), Fail> {
        for &r in ranks {
            p2p::notify(self.ctx, (self.members[r as usize], self.rank), tag)?;
        }
        Ok(())
    }
}

mpi! {
    /// Opens an exposure epoch to the origins of `group`.
    fn MPI_Win_post / PMPI_Win_post(group: Handle, assert: c_int, win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            assert_of(assert)?;
            let origins = w.ranks_of(group)?;
            if w.with(|s| Ok(s.posted.is_some()))? {
                return Err(Fail::new(err::RMA_SYNC, "an exposure epoch is open already"));
            }
            let expected = (origins.iter())
                .map(|&o| p2p::expect(w.ctx, &w.members, o, COMPLETED))
                .collect::<Result<Vec<u64>, Fail>>()?;
            w.notify(&origins, POSTED)?;
            w.with(|s| {
                s.posted = Some(expected);
                Ok(())
            })
        });
        finish_win("MPI_Win_post", win, result)
    }
}

mpi! {
    /// Opens an access epoch to the targets of `group`, once each has
    /// posted.
    fn MPI_Win_start / PMPI_Win_start(group: Handle, assert: c_int, win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            assert_of(assert)?;
            let targets = w.ranks_of(group)?;
            let busy = w.with(|s| Ok(s.started.is_some() || s.all.is_some() || !s.locks.is_empty()))?;
            if busy {
                return Err(Fail::new(err::RMA_SYNC, "an access epoch is open already"));
            }
            for &t in &targets {
                let id = p2p::expect(w.ctx, &w.members, t, POSTED)?;
                p2p::arrived(id, true)?;
            }
            w.with(|s| {
                s.end_fence();
                let epoch = s.window().lock_all(Assert::NOCHECK)?;
                s.started = Some((targets, epoch));
                Ok(())
            })
        });
        finish_win("MPI_Win_start", win, result)
    }
}

mpi! {
    /// Closes the access epoch of `MPI_Win_start`: the accesses are done
    /// at the targets, which are told.
    fn MPI_Win_complete / PMPI_Win_complete(win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let (targets, epoch) = w.with(|s| {
                s.started.take().ok_or_else(|| Fail::new(err::RMA_SYNC, "no start epoch is open"))
            })?;
            epoch.unlock()?;
            w.notify(&targets, COMPLETED)
        });
        finish_win("MPI_Win_complete", win, result)
    }
}

/// Ends the exposure epoch of `w` once every origin completed (waiting
/// when `block`); whether it ended.
fn exposure_done(w: &WinEntry, block: bool) -> Result<bool, Fail> {
    let pending = w.with(|s| {
        s.posted
            .take()
            .ok_or_else(|| Fail::new(err::RMA_SYNC, "no post epoch is open"))
    })?;
    let mut left = Vec::new();
    for id in pending {
        match p2p::arrived(id, block) {
            Ok(true) => {}
            Ok(false) => left.push(id),
            Err(e) => {
                left.push(id);
                w.with(|s| {
                    s.posted = Some(left);
                    Ok(())
                })?;
                return Err(e);
            }
        }
    }
    let done = left.is_empty();
    if !done {
        w.with(|s| {
            s.posted = Some(left);
            Ok(())
        })?;
    }
    Ok(done)
}

mpi! {
    /// Closes the exposure epoch once every origin of it completed.
    fn MPI_Win_wait / PMPI_Win_wait(win: Handle) -> c_int {
        let result = runtime::win(win).and_then(|w| exposure_done(&w, true).map(drop));
        finish_win("MPI_Win_wait", win, result)
    }
}

mpi! {
    /// Whether every origin of the exposure epoch completed (the epoch is
    /// closed then).
    fn MPI_Win_test / PMPI_Win_test(win: Handle, flag: *mut c_int) -> c_int {
        let result = runtime::win(win).and_then(|w| {
            let done = exposure_done(&w, false)?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(flag, c_int::from(done), "flag") }
        });
        finish_win("MPI_Win_test", win, result)
    }
}
