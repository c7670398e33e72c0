//! Derived datatypes as plain data: a type map flattened to runs of
//! bytes, built by the type constructors of MPI (contiguous, vector,
//! hvector, indexed, hindexed, indexed_block, struct, subarray, resized)
//! with MPI's lower bound, extent and true extent. No I/O: packing and
//! unpacking (`datatype.rs`) walk the runs.
//!
//! A run is `len` bytes at offset `at` from the buffer's start (an
//! element of the datatype); runs keep the type map's order, and
//! adjacent ones merge, so a contiguous type is one run. Memory: one run
//! per non-adjacent block of the flattened map.

use crate::datatype::Element;

/// `len` bytes at byte offset `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub at: isize,
    pub len: usize,
}

/// A datatype's flattened type map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeMap {
    /// The data, in type-map order.
    pub runs: Vec<Run>,
    /// Bytes of data (the sum of the runs).
    pub size: usize,
    /// Predefined elements in the data (`MPI_Get_elements`).
    pub elements: usize,
    /// MPI's lower and upper bounds (extent = ub - lb).
    pub lb: isize,
    pub ub: isize,
    /// The bounds of the data itself.
    pub true_lb: isize,
    pub true_ub: isize,
    /// The predefined element every byte of data belongs to (`None` when
    /// it mixes elements): what a reduction combines, and its size.
    pub element: Option<(Element, usize)>,
}

/// A constructor's argument that no type map can have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid(pub String);

impl TypeMap {
    /// A predefined type of `size` bytes of `element`.
    pub fn predefined(size: usize, element: Element) -> TypeMap {
        TypeMap {
            runs: if size > 0 {
                vec![Run { at: 0, len: size }]
            } else {
                Vec::new()
            },
            size,
            elements: 1,
            lb: 0,
            ub: size as isize,
            true_lb: 0,
            true_ub: size as isize,
            element: Some((element, size)),
        }
    }

    /// The extent: `ub - lb`.
    pub fn extent(&self) -> isize {
        self.ub - self.lb
    }

    /// Whether `count` elements are `count * size` bytes one after the
    /// other from the buffer's start (a predefined type, or contiguous
    /// copies of one): moved as bytes, no packing.
    pub fn is_dense(&self) -> bool {
        self.lb == 0
            && self.extent() == self.size as isize
            && (self.runs.is_empty()
                || self.runs
                    == [Run {
                        at: 0,
                        len: self.size,
                    }])
    }

    /// A type map built block by block.
    fn build() -> Builder {
        Builder::default()
    }

    /// `count` copies of `old`, one after the other.
    pub fn contiguous(count: usize, old: &TypeMap) -> Result<TypeMap, Invalid> {
        TypeMap::hvector(count, 1, old.extent(), old)
    }

    /// `count` blocks of `blocklen` copies of `old`, block starts `stride`
    /// extents of `old` apart.
    pub fn vector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &TypeMap,
    ) -> Result<TypeMap, Invalid> {
        let stride = stride
            .checked_mul(old.extent())
            .ok_or_else(|| Invalid(format!("stride {stride}")))?;
        TypeMap::hvector(count, blocklen, stride, old)
    }

    /// As [`TypeMap::vector`], the stride in bytes.
    pub fn hvector(
        count: usize,
        blocklen: usize,
        stride: isize,
        old: &TypeMap,
    ) -> Result<TypeMap, Invalid> {
        let mut b = TypeMap::build();
        for i in 0..count {
            let start = (i as isize)
                .checked_mul(stride)
                .ok_or_else(|| Invalid(format!("stride {stride}")))?;
            b.block(start, blocklen, old)?;
        }
        Ok(b.finish())
    }

    /// Blocks of `blocklens[i]` copies of `old` at `displs[i]` extents of
    /// `old` (`indexed`), or bytes (`hindexed`, `bytes`).
    pub fn indexed(
        blocklens: &[usize],
        displs: &[isize],
        bytes: bool,
        old: &TypeMap,
    ) -> Result<TypeMap, Invalid> {
        let mut b = TypeMap::build();
        for (&len, &d) in blocklens.iter().zip(displs) {
            let at = match bytes {
                true => Some(d),
                false => d.checked_mul(old.extent()),
            };
            b.block(
                at.ok_or_else(|| Invalid(format!("displacement {d}")))?,
                len,
                old,
            )?;
        }
        Ok(b.finish())
    }

    /// Blocks of `blocklens[i]` copies of `types[i]` at byte `displs[i]`.
    pub fn structure(
        blocklens: &[usize],
        displs: &[isize],
        types: &[&TypeMap],
    ) -> Result<TypeMap, Invalid> {
        let mut b = TypeMap::build();
        for ((&len, &d), t) in blocklens.iter().zip(displs).zip(types) {
            b.block(d, len, t)?;
        }
        Ok(b.finish())
    }

    /// `old` with lower bound `lb` and extent `extent`.
    pub fn resized(old: &TypeMap, lb: isize, extent: isize) -> Result<TypeMap, Invalid> {
        let ub = lb
            .checked_add(extent)
            .ok_or_else(|| Invalid(format!("extent {extent}")))?;
        Ok(TypeMap {
            lb,
            ub,
            ..old.clone()
        })
    }

    /// The subarray `subsizes` at `starts` of an array `sizes` of `old`,
    /// in C order (`c_order`, the last dimension varies fastest) or
    /// Fortran's; its extent is the whole array's.
    pub fn subarray(
        sizes: &[usize],
        subsizes: &[usize],
        starts: &[usize],
        c_order: bool,
        old: &TypeMap,
    ) -> Result<TypeMap, Invalid> {
        let n = sizes.len();
        if subsizes.len() != n || starts.len() != n || n == 0 {
            return Err(Invalid(format!("{n} dimensions")));
        }
        for d in 0..n {
            if subsizes[d] == 0
                || starts[d]
                    .checked_add(subsizes[d])
                    .is_none_or(|end| end > sizes[d])
            {
                let (s, sub, st) = (sizes[d], subsizes[d], starts[d]);
                return Err(Invalid(format!(
                    "dimension {d}: {sub} elements at {st} of {s}"
                )));
            }
        }
        // Dimensions from the fastest varying: order[0] is it.
        let order: Vec<usize> = match c_order {
            true => (0..n).rev().collect(),
            false => (0..n).collect(),
        };
        let extent = old.extent();
        // Strides in elements of old, per dimension.
        let too_large = || Invalid(format!("an array of {sizes:?} elements"));
        let mut stride = vec![1usize; n];
        for k in 1..n {
            stride[order[k]] =
                (stride[order[k - 1]].checked_mul(sizes[order[k - 1]])).ok_or_else(too_large)?;
        }
        let total = (sizes.iter())
            .try_fold(1usize, |t, &s| t.checked_mul(s))
            .filter(|&t| isize::try_from(t).is_ok_and(|t| t.checked_mul(extent).is_some()))
            .ok_or_else(too_large)?;
        let mut b = TypeMap::build();
        // Every row of the fastest dimension, in order.
        let rows: usize = order[1..].iter().map(|&d| subsizes[d]).product();
        let mut index = vec![0usize; n];
        for _ in 0..rows {
            let mut first = 0usize;
            for d in 0..n {
                first += (starts[d] + if d == order[0] { 0 } else { index[d] }) * stride[d];
            }
            // first < total, whose extent in bytes fits (checked above).
            b.block(first as isize * extent, subsizes[order[0]], old)?;
            for &d in &order[1..] {
                index[d] += 1;
                if index[d] < subsizes[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        let mut map = b.finish();
        map.lb = 0;
        map.ub = total as isize * extent;
        Ok(map)
    }
}

/// Accumulates placed blocks into a type map.
#[derive(Default)]
struct Builder {
    runs: Vec<Run>,
    size: usize,
    elements: usize,
    bounds: Option<(isize, isize)>,
    true_bounds: Option<(isize, isize)>,
    element: Option<Option<(Element, usize)>>,
}

impl Builder {
    /// `count` copies of `old` from byte `at`, one extent apart.
    fn block(&mut self, at: isize, count: usize, old: &TypeMap) -> Result<(), Invalid> {
        let overflow = || Invalid(format!("a block at {at} of {count} elements"));
        let extent = old.extent();
        for k in 0..count {
            let base = (k as isize)
                .checked_mul(extent)
                .and_then(|o| o.checked_add(at))
                .ok_or_else(overflow)?;
            let shift = |x: isize| base.checked_add(x).ok_or_else(overflow);
            for run in &old.runs {
                let at = shift(run.at)?;
                self.push(Run { at, len: run.len });
            }
            self.size = self.size.checked_add(old.size).ok_or_else(overflow)?;
            self.elements = self.elements.saturating_add(old.elements);
            let (lb, ub) = (shift(old.lb)?, shift(old.ub)?);
            self.bounds = Some(match self.bounds {
                Some((l, u)) => (l.min(lb), u.max(ub)),
                None => (lb, ub),
            });
            if old.size > 0 {
                let (tl, tu) = (shift(old.true_lb)?, shift(old.true_ub)?);
                self.true_bounds = Some(match self.true_bounds {
                    Some((l, u)) => (l.min(tl), u.max(tu)),
                    None => (tl, tu),
                });
            }
            self.element = Some(match self.element {
                None => old.element,
                Some(e) if e == old.element => e,
                Some(_) => None,
            });
        }
        Ok(())
    }

    fn push(&mut self, run: Run) {
        if run.len == 0 {
            return;
        }
        match self.runs.last_mut() {
            Some(last) if last.at + last.len as isize == run.at => last.len += run.len,
            _ => self.runs.push(run),
        }
    }

    fn finish(self) -> TypeMap {
        let (lb, ub) = self.bounds.unwrap_or((0, 0));
        let (true_lb, true_ub) = self.true_bounds.unwrap_or((0, 0));
        TypeMap {
            runs: self.runs,
            size: self.size,
            elements: self.elements,
            lb,
            ub,
            true_lb,
            true_ub,
            element: self.element.flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> TypeMap {
        TypeMap::predefined(4, Element::I32)
    }

    fn runs(m: &TypeMap) -> Vec<(isize, usize)> {
        m.runs.iter().map(|r| (r.at, r.len)).collect()
    }

    #[test]
    fn contiguous_copies_are_one_run() {
        let m = TypeMap::contiguous(5, &int()).unwrap();
        assert_eq!(runs(&m), vec![(0, 20)]);
        assert_eq!((m.size, m.lb, m.ub, m.extent()), (20, 0, 20, 20));
        assert!(m.is_dense());
        assert_eq!(m.element, Some((Element::I32, 4)));
    }

    #[test]
    fn a_vector_is_strided_blocks_and_ends_at_its_last_block() {
        // 3 blocks of 2 ints, 4 ints apart: a column of a 3x4 matrix pair.
        let m = TypeMap::vector(3, 2, 4, &int()).unwrap();
        assert_eq!(runs(&m), vec![(0, 8), (16, 8), (32, 8)]);
        assert_eq!((m.size, m.lb, m.ub), (24, 0, 40));
        assert!(!m.is_dense());
        let neg = TypeMap::hvector(2, 1, -8, &int()).unwrap();
        assert_eq!(runs(&neg), vec![(0, 4), (-8, 4)]);
        assert_eq!((neg.lb, neg.ub, neg.true_lb, neg.true_ub), (-8, 4, -8, 4));
    }

    #[test]
    fn indexed_blocks_keep_the_order_given() {
        let m = TypeMap::indexed(&[2, 1], &[3, 0], false, &int()).unwrap();
        assert_eq!(runs(&m), vec![(12, 8), (0, 4)]);
        assert_eq!((m.size, m.lb, m.ub), (12, 0, 20));
        let h = TypeMap::indexed(&[1, 1], &[1, 6], true, &int()).unwrap();
        assert_eq!(runs(&h), vec![(1, 4), (6, 4)]);
    }

    #[test]
    fn a_struct_mixes_elements_and_resizing_moves_the_bounds() {
        let d = TypeMap::predefined(8, Element::F64);
        let s = TypeMap::structure(&[1, 2], &[0, 8], &[&d, &int()]).unwrap();
        assert_eq!(runs(&s), vec![(0, 16)]);
        assert_eq!(s.element, None);
        assert_eq!(s.elements, 3);
        assert_eq!((s.size, s.extent()), (16, 16));
        let r = TypeMap::resized(&int(), -4, 12).unwrap();
        assert_eq!(
            (r.lb, r.ub, r.extent(), r.true_lb, r.true_ub),
            (-4, 8, 12, 0, 4)
        );
        let v = TypeMap::contiguous(2, &r).unwrap();
        assert_eq!(runs(&v), vec![(0, 4), (12, 4)]);
        assert_eq!((v.lb, v.ub), (-4, 20));
    }

    #[test]
    fn a_subarray_takes_rows_in_either_order() {
        // A 2x3 block at (1, 1) of a 4x5 int array, C order.
        let c = TypeMap::subarray(&[4, 5], &[2, 3], &[1, 1], true, &int()).unwrap();
        assert_eq!(runs(&c), vec![(24, 12), (44, 12)]);
        assert_eq!((c.lb, c.ub, c.size), (0, 80, 24));
        // Fortran order: the first dimension varies fastest.
        let f = TypeMap::subarray(&[4, 5], &[2, 3], &[1, 1], false, &int()).unwrap();
        assert_eq!(runs(&f), vec![(20, 8), (36, 8), (52, 8)]);
        assert!(TypeMap::subarray(&[4], &[3], &[2], true, &int()).is_err());
        // Sizes past what an address holds are refused, not wrapped.
        assert!(TypeMap::subarray(&[usize::MAX, 4], &[1, 1], &[0, 0], true, &int()).is_err());
        assert!(TypeMap::subarray(&[4], &[1], &[usize::MAX], true, &int()).is_err());
        assert!(TypeMap::hvector(2, 1, isize::MAX, &int()).is_err());
    }
}
