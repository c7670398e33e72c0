//! Dynamic windows: attaching and detaching memory, and describing the
//! attachments to the members.

use super::*;

impl Window {
    /// Attaches `region` (from [`Endpoint::register`], with the remote
    /// rights peers need) to this dynamic window; returns its displacement.
    /// The caller may keep a clone of the `Arc` and read and write the
    /// region while it is attached (as `MPI_Win_attach` leaves memory to
    /// its owner); the window holds it until detached or freed. The
    /// displacement is
    /// `k << 40` for the `k`-th attachment of this process (1-based), so
    /// that processes attaching in the same order know each other's
    /// displacements. No wait: the new list goes to at most 4 members on
    /// other hosts (see the crate docs); the others learn it when they ask.
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when the window is not dynamic;
    /// [`Error::TooMany`] beyond 1000 attachments at once.
    pub fn attach(&self, region: Arc<MemoryRegion>) -> Result<u64, Error> {
        let attached = self.attached.as_ref().ok_or(Error::EpochConflict(
            "attach to a window that is not dynamic",
        ))?;
        let mut attached = attached.borrow_mut();
        if attached.0.len() >= MAX_ATTACHMENTS {
            return Err(Error::TooMany(
                "a dynamic window holds at most 1000 attachments at once",
            ));
        }
        let disp = (attached.1 + 1)
            .checked_mul(1 << ATTACH_SHIFT)
            .ok_or(Error::TooMany(
                "a dynamic window takes at most 2^24 attachments in its life",
            ))?;
        attached.1 += 1;
        attached.0.push(Attachment { disp, region });
        self.describe_attachments(&attached.0);
        Ok(disp)
    }

    /// Detaches the attachment at displacement `disp` and gives its region
    /// back. Peers must have finished their accesses to it (as with
    /// `MPI_Win_detach`). No wait, at most 4 notices, as [`Window::attach`].
    ///
    /// # Errors
    /// [`Error::EpochConflict`] when the window is not dynamic;
    /// [`Error::OutOfRange`] when nothing is attached there.
    pub fn detach(&self, disp: u64) -> Result<Arc<MemoryRegion>, Error> {
        let attached = self.attached.as_ref().ok_or(Error::EpochConflict(
            "detach from a window that is not dynamic",
        ))?;
        let mut attached = attached.borrow_mut();
        let i =
            (attached.0.iter().position(|a| a.disp == disp)).ok_or_else(|| Error::OutOfRange {
                what: "detach",
                target: self.group().group_rank(self.rma().ep.rank()).unwrap_or(0),
                window: self.id,
                offset: disp,
                len: 0,
                size: 0,
            })?;
        let gone = attached.0.remove(i);
        self.describe_attachments(&attached.0);
        Ok(gone.region)
    }

    /// A dynamic window learns its peers' attachments anew in each epoch
    /// (at its first access to each), so that an access to memory detached
    /// since is refused rather than made.
    pub(super) fn forget_attachments(&self) {
        if self.attached.is_some() {
            lock_state(&self.rma().attachments).retain(|(_, x), _| *x != self.id);
        }
    }

    /// Publishes this dynamic window's attachments (to the directory too,
    /// when they fit).
    pub(super) fn describe_attachments(&self, list: &[Attachment]) {
        let list = list
            .iter()
            .map(|a| Attached {
                disp: a.disp,
                remote: a.region.remote(),
                name: a.region.shared_name().unwrap_or_default().to_string(),
            })
            .collect();
        let described = Described::Attachments(list);
        // Publishing an id again rewrites its slot in place, once.
        self.rma().directory.publish(self.id, &described.encode());
        self.rma().push(self.group(), self.id, &described);
        lock_state(&self.rma().served)
            .described
            .insert(self.id, described);
    }
}
