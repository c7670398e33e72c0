//! The table of posted operations: a slab indexed by token, so filing a
//! completion and picking it up cost an index, not a hash.
//!
//! A token is `(generation << 32) | index`, with generations starting at 1:
//! never 0 (raw loops post with a null context), and a completion that
//! arrives for an abandoned operation whose index was reused finds another
//! generation and is dropped.

/// The state of one posted operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot<T> {
    /// Posted, not completed.
    Pending,
    /// Completed, not yet picked up.
    Done(T),
}

#[derive(Debug)]
struct Entry<T> {
    generation: u32,
    slot: Option<Slot<T>>,
}

/// Posted operations by token.
#[derive(Debug)]
pub(crate) struct Slots<T> {
    entries: Vec<Entry<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots {
            entries: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slots<T> {
    /// Files a new pending operation; returns its token.
    pub fn insert(&mut self) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(Entry {
                    generation: 0,
                    slot: None,
                });
                (self.entries.len() - 1) as u32
            }
        };
        let entry = &mut self.entries[index as usize];
        entry.generation = entry.generation.wrapping_add(1).max(1);
        entry.slot = Some(Slot::Pending);
        (u64::from(entry.generation) << 32) | u64::from(index)
    }

    fn entry(&mut self, token: u64) -> Option<&mut Entry<T>> {
        let index = (token & u64::from(u32::MAX)) as usize;
        let generation = (token >> 32) as u32;
        self.entries
            .get_mut(index)
            .filter(|e| e.generation == generation && e.slot.is_some())
    }

    /// Records the outcome of `token`; returns false (and drops it) for
    /// an unknown token.
    pub fn finish(&mut self, token: u64, outcome: T) -> bool {
        match self.entry(token) {
            Some(entry) => {
                entry.slot = Some(Slot::Done(outcome));
                true
            }
            None => false,
        }
    }

    /// Takes the outcome of `token` if it has completed (freeing the slot).
    pub fn take_done(&mut self, token: u64) -> Option<T> {
        let entry = self.entry(token)?;
        if !matches!(entry.slot, Some(Slot::Done(_))) {
            return None;
        }
        let Some(Slot::Done(outcome)) = entry.slot.take() else {
            return None;
        };
        self.free.push((token & u64::from(u32::MAX)) as u32);
        Some(outcome)
    }

    /// Forgets `token`, pending or not.
    pub fn remove(&mut self, token: u64) {
        if let Some(entry) = self.entry(token) {
            entry.slot = None;
            self.free.push((token & u64::from(u32::MAX)) as u32);
        }
    }

    /// Number of operations filed.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_nonzero_and_unique() {
        let mut s = Slots::<u8>::default();
        let a = s.insert();
        let b = s.insert();
        assert_ne!(a, 0);
        assert_ne!(a, b);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn completion_is_filed_and_taken_once() {
        let mut s = Slots::default();
        let t = s.insert();
        assert_eq!(s.take_done(t), None);
        s.finish(t, 7);
        assert_eq!(s.take_done(t), Some(7));
        assert_eq!(s.take_done(t), None);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn stale_tokens_are_ignored_after_reuse() {
        let mut s = Slots::default();
        let old = s.insert();
        s.remove(old);
        let new = s.insert();
        assert_ne!(old, new, "a reused index gets a new generation");
        assert!(!s.finish(old, 1));
        assert_eq!(s.take_done(new), None);
        assert!(s.finish(new, 2));
        assert_eq!(s.take_done(new), Some(2));
        assert!(!s.finish(0, 3));
        s.remove(12345);
    }
}
