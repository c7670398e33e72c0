//! Registered data: typed handles over type-erased columns, and what a
//! registration says (layout, when it moves) in the form processes compare.

use std::any::Any;
use std::marker::PhantomData;

/// How a registered array is spread over the processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Block-distributed: a global array of `len` elements, process `i`
    /// of `P` holding [`crate::block::block`]`(len, P, i)`.
    Distributed {
        /// Global elements.
        len: u64,
    },
    /// The same whole array on every process (new processes get rank
    /// 0's).
    Replicated,
}

/// When registered data moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moves {
    /// Never modified after registration: moves in the background while
    /// the application iterates.
    Constant,
    /// Modified every iteration: moves at the end of the reconfiguration,
    /// blocking.
    Variable,
}

/// A typed handle to registered data: `Data<f64>` reads as `f64` only.
#[derive(Debug)]
pub struct Data<T> {
    pub(crate) index: usize,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Data<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Data<T> {}

impl<T> Data<T> {
    pub(crate) fn new(index: usize) -> Data<T> {
        Data {
            index,
            _t: PhantomData,
        }
    }

    /// Its index, in registration order (as errors name it).
    pub fn index(&self) -> usize {
        self.index
    }
}

/// An array of some `Pod` type, seen as bytes by the engine.
pub(crate) trait Column: Send + Sync {
    fn bytes(&self) -> &[u8];
    fn bytes_mut(&mut self) -> &mut [u8];
    /// A zeroed column of the same type, `len` elements.
    fn fresh(&self, len: usize) -> Box<dyn Column>;
    /// This column, leaving an empty one in its place.
    fn take(&mut self) -> Box<dyn Column>;
    /// Resized to `len` elements, zeroed where it grows, in place where
    /// it can ([`onesided_fabric::pages::resize`]).
    fn resize(&mut self, len: usize);
    fn element_size(&self) -> usize;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: bytemuck::Pod + Send + Sync> Column for Vec<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        bytemuck::cast_slice_mut(self)
    }

    fn fresh(&self, len: usize) -> Box<dyn Column> {
        Box::new(vec![T::zeroed(); len])
    }

    fn take(&mut self) -> Box<dyn Column> {
        Box::new(std::mem::take(self))
    }

    fn resize(&mut self, len: usize) {
        onesided_fabric::pages::resize(self, len, T::zeroed());
    }

    fn element_size(&self) -> usize {
        size_of::<T>()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// What every process must register alike, as numbers to compare:
/// layout (0 distributed, 1 replicated), global length (a replicated
/// array's is its `local` length), element size, moves (0 constant, 1
/// variable).
pub(crate) fn signature(layout: Layout, local: u64, element: usize, moves: Moves) -> [u64; 4] {
    let (kind, len) = match layout {
        Layout::Distributed { len } => (0, len),
        Layout::Replicated => (1, local),
    };
    let moves = match moves {
        Moves::Constant => 0,
        Moves::Variable => 1,
    };
    [kind, len, element as u64, moves]
}

/// The first difference between rank 0's signatures and `theirs` (rank
/// `rank`'s), described; a `new` process's replicated arrays are empty
/// (it receives them), so their lengths are not compared.
pub(crate) fn differs(
    mine: &[[u64; 4]],
    theirs: &[[u64; 4]],
    rank: u32,
    new: bool,
) -> Option<(usize, String)> {
    if mine.len() != theirs.len() {
        return Some((
            mine.len().min(theirs.len()),
            format!(
                "registered {} data at rank 0, {} at rank {rank}",
                mine.len(),
                theirs.len()
            ),
        ));
    }
    const FIELDS: [&str; 4] = ["layout", "global length", "element size", "kind"];
    for (i, (a, b)) in mine.iter().zip(theirs).enumerate() {
        let skip = |f: usize| new && f == 1 && a[0] == 1;
        if let Some(f) = (0..4).find(|&f| a[f] != b[f] && !skip(f)) {
            return Some((
                i,
                format!("{} {} at rank 0, {} at rank {rank}", FIELDS[f], a[f], b[f]),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_name_the_first_difference() {
        let a = signature(Layout::Distributed { len: 10 }, 5, 8, Moves::Constant);
        let b = signature(Layout::Distributed { len: 11 }, 5, 8, Moves::Constant);
        assert_eq!(differs(&[a], &[a], 1, false), None);
        let (i, what) = differs(&[a, a], &[a, b], 3, false).unwrap();
        assert_eq!(i, 1);
        assert_eq!(what, "global length 10 at rank 0, 11 at rank 3");
        let c = signature(Layout::Replicated, 4, 4, Moves::Variable);
        assert!(differs(&[a], &[c], 2, false)
            .unwrap()
            .1
            .starts_with("layout"));
        let (_, what) = differs(&[a], &[], 2, false).unwrap();
        assert!(what.contains("registered 1 data at rank 0, 0 at rank 2"));
        // A new process's replicated copy is empty; its other fields count.
        let empty = signature(Layout::Replicated, 0, 4, Moves::Variable);
        assert_eq!(differs(&[c], &[empty], 2, true), None);
        assert!(differs(&[c], &[empty], 2, false).is_some());
        let wide = signature(Layout::Replicated, 0, 8, Moves::Variable);
        let (_, what) = differs(&[c], &[wide], 2, true).unwrap();
        assert!(what.starts_with("element size"));
    }

    #[test]
    fn columns_are_their_bytes() {
        let mut c: Box<dyn Column> = Box::new(vec![1u32, 2]);
        assert_eq!(c.bytes(), &[1, 0, 0, 0, 2, 0, 0, 0]);
        c.bytes_mut()[0] = 9;
        assert_eq!(c.as_any().downcast_ref::<Vec<u32>>(), Some(&vec![9, 2]));
        let f = c.fresh(3);
        assert_eq!(f.bytes().len(), 12);
        assert_eq!(f.element_size(), 4);
        let mut taken = c.take();
        assert!(c.bytes().is_empty());
        taken.resize(3);
        assert_eq!(taken.bytes(), &[9, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    }
}
