//! The executor's lines: registered regions attached to the reducer's
//! dynamic window, each named by its displacement.

use std::collections::HashMap;
use std::sync::Arc;

use onesided_fabric::MemoryRegion;
use onesided_rma::Window;

use crate::message::Key;

/// The executor's window and the lines attached to it.
pub(crate) struct Lines {
    pub(crate) window: Window,
    /// Lines held here, by (reduction, displacement): length and region.
    pub(crate) held: HashMap<(Key, u64), (usize, Arc<MemoryRegion>)>,
}

impl Lines {
    /// Attaches `region` (`len` bytes of reduction `key`) to the window:
    /// its displacement, or the region back when the window is full.
    pub(crate) fn attach(
        &mut self,
        key: Key,
        len: usize,
        region: Arc<MemoryRegion>,
    ) -> Result<u64, Arc<MemoryRegion>> {
        match self.window.attach(Arc::clone(&region)) {
            Ok(disp) => {
                self.held.insert((key, disp), (len, region));
                Ok(disp)
            }
            Err(_) => Err(region),
        }
    }

    /// Detaches reduction `key`'s lines (every fetch of them is over):
    /// their regions, by length.
    pub(crate) fn release(&mut self, key: Key) -> Vec<(usize, Arc<MemoryRegion>)> {
        let mine: Vec<(Key, u64)> = (self.held.keys())
            .filter(|(k, _)| *k == key)
            .copied()
            .collect();
        let mut out = Vec::new();
        for at in mine {
            if let Some(line) = self.held.remove(&at) {
                let _ = self.window.detach(at.1);
                out.push(line);
            }
        }
        out
    }

    pub(crate) fn release_all(&mut self) -> Vec<(usize, Arc<MemoryRegion>)> {
        let all: Vec<_> = std::mem::take(&mut self.held).into_iter().collect();
        (all.into_iter())
            .map(|((_, disp), line)| {
                let _ = self.window.detach(disp);
                line
            })
            .collect()
    }
}
