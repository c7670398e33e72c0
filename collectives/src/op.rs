//! Reduction operations: the built-in ones (`MPI_SUM`, `MPI_PROD`,
//! `MPI_MIN`, `MPI_MAX`, `MPI_BAND`, `MPI_BOR`, `MPI_BXOR`) on integer and
//! float elements, and user-defined ones. Pure arithmetic, tested without
//! processes.
//!
//! Built-in operations are commutative and associative (floats up to
//! rounding: algorithms that combine in different orders may differ in the
//! last bits, as in MPI). A user-defined operation is declared commutative
//! or not; algorithms that reorder operands are only chosen for commutative
//! ones.

pub use onesided_rma::op::{Builtin, Op, UserFn};

use crate::Error;

/// An element type reductions work on.
pub trait Reducible: bytemuck::Pod + PartialOrd + Send + Sync {
    /// Its name in profiles (`i32`, `f64`, ...).
    const NAME: &'static str;

    /// `a op b`, or `None` when the operation does not reduce this type
    /// (bitwise operations on floats; `REPLACE` and `NO_OP`, which are for
    /// atomics).
    fn combine(op: Builtin, a: Self, b: Self) -> Option<Self>;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            const NAME: &'static str = stringify!($t);

            #[inline(always)]
            fn combine(op: Builtin, a: $t, b: $t) -> Option<$t> {
                Some(match op {
                    Builtin::Sum => a.wrapping_add(b),
                    Builtin::Prod => a.wrapping_mul(b),
                    Builtin::Min => a.min(b),
                    Builtin::Max => a.max(b),
                    Builtin::Band => a & b,
                    Builtin::Bor => a | b,
                    Builtin::Bxor => a ^ b,
                    Builtin::Replace | Builtin::NoOp => return None,
                })
            }
        }
    )*};
}

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            const NAME: &'static str = stringify!($t);

            #[inline(always)]
            fn combine(op: Builtin, a: $t, b: $t) -> Option<$t> {
                match op {
                    Builtin::Sum => Some(a + b),
                    Builtin::Prod => Some(a * b),
                    // NaN propagates, as C's fmin/fmax do not: a reduction
                    // that met a NaN says so.
                    Builtin::Min => Some(if a.is_nan() || a < b { a } else { b }),
                    Builtin::Max => Some(if a.is_nan() || a > b { a } else { b }),
                    Builtin::Band
                    | Builtin::Bor
                    | Builtin::Bxor
                    | Builtin::Replace
                    | Builtin::NoOp => None,
                }
            }
        }
    )*};
}

integers!(i8, u8, i16, u16, i32, u32, i64, u64);
floats!(f32, f64);

/// What the executors do with an [`Op`] (crate-private: the operation
/// type itself belongs to onesided-rma, shared with the atomics).
pub(crate) trait Reduce<T> {
    /// Checks that the operation reduces `T` (before any message moves).
    ///
    /// # Errors
    /// [`Error::BadOp`] for a bitwise operation on floats, or an operation
    /// that is not a reduction (`REPLACE`, `NO_OP`).
    fn check(&self) -> Result<(), Error>;
    /// `inout[i] = inout[i] op input[i]` for every `i`.
    fn apply(&self, inout: &mut [T], input: &[T]);
    /// `inout[i] = left[i] op inout[i]` for every `i`.
    fn apply_left(&self, inout: &mut [T], left: &[T]);
    /// Whether [`Reduce::apply_left`] works in place.
    fn left_in_place(&self) -> bool;
}

impl<T: Reducible> Reduce<T> for Op<T> {
    /// Checks that the operation applies to `T` (before any message moves).
    ///
    /// # Errors
    /// [`Error::BadOp`] for a bitwise operation on floats.
    fn check(&self) -> Result<(), Error> {
        match self {
            Op::Builtin(b) if T::combine(*b, T::zeroed(), T::zeroed()).is_none() => {
                Err(Error::BadOp {
                    op: format!("{b:?}"),
                    element: T::NAME,
                })
            }
            _ => Ok(()),
        }
    }

    /// `inout[i] = inout[i] op input[i]` for every `i` (the shorter length
    /// wins; callers pass equal lengths).
    fn apply(&self, inout: &mut [T], input: &[T]) {
        match self {
            Op::Builtin(b) => each(*b, inout, input, |x, y| (x, y)),
            Op::User { f, .. } => {
                let n = inout.len().min(input.len());
                f(&mut inout[..n], &input[..n]);
            }
        }
    }

    /// `inout[i] = left[i] op inout[i]` for every `i`: the same operands
    /// in the other order (a user-defined operation goes through a copy of
    /// `left`, since it only combines into its first argument).
    fn apply_left(&self, inout: &mut [T], left: &[T]) {
        match self {
            Op::Builtin(b) => each(*b, inout, left, |x, y| (y, x)),
            Op::User { f, .. } => {
                let n = inout.len().min(left.len());
                let mut result = left[..n].to_vec();
                f(&mut result, &inout[..n]);
                inout[..n].copy_from_slice(&result);
            }
        }
    }

    /// Whether [`Reduce::apply_left`] works in place (a built-in operation).
    fn left_in_place(&self) -> bool {
        matches!(self, Op::Builtin(_))
    }
}

/// `inout[i] = b(operands(inout[i], other[i]))` for every `i`. The
/// operation and the operand order are fixed per loop, not matched per
/// element, so that the loop compiles to vector instructions (a sum of 4
/// KiB of `u64` called the combination per element before).
fn each<T: Reducible>(b: Builtin, inout: &mut [T], other: &[T], operands: impl Fn(T, T) -> (T, T)) {
    #[inline(always)]
    fn fixed<T: Reducible>(
        b: Builtin,
        inout: &mut [T],
        other: &[T],
        operands: impl Fn(T, T) -> (T, T),
    ) {
        for (x, y) in inout.iter_mut().zip(other) {
            let (l, r) = operands(*x, *y);
            if let Some(v) = T::combine(b, l, r) {
                *x = v;
            }
        }
    }
    match b {
        Builtin::Sum => fixed(Builtin::Sum, inout, other, operands),
        Builtin::Prod => fixed(Builtin::Prod, inout, other, operands),
        Builtin::Min => fixed(Builtin::Min, inout, other, operands),
        Builtin::Max => fixed(Builtin::Max, inout, other, operands),
        Builtin::Band => fixed(Builtin::Band, inout, other, operands),
        Builtin::Bor => fixed(Builtin::Bor, inout, other, operands),
        Builtin::Bxor => fixed(Builtin::Bxor, inout, other, operands),
        Builtin::Replace | Builtin::NoOp => {}
    }
}

/// A reduction's operation as the executors apply it, for element types
/// they know only as `Pod`: the operation and its application for `T`,
/// made without an allocation (a call of a few bytes costs about as much
/// as one).
pub(crate) struct Combine<T> {
    op: Op<T>,
    apply: fn(&Op<T>, &mut [T], &[T], bool),
}

impl<T: Reducible> Combine<T> {
    /// Applies `op` (checked: [`Op::check`]).
    pub(crate) fn new(op: &Op<T>) -> Combine<T> {
        Combine {
            op: op.clone(),
            apply: |op, inout, other, other_first| {
                if other_first {
                    op.apply_left(inout, other)
                } else {
                    op.apply(inout, other)
                }
            },
        }
    }
}

impl<T> Combine<T> {
    /// Sets `inout` to `inout op other`, or to `other op inout` when
    /// `other_first`.
    pub(crate) fn call(&self, inout: &mut [T], other: &[T], other_first: bool) {
        (self.apply)(&self.op, inout, other, other_first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_left_keeps_the_operand_order() {
        let first = Op::<i32>::user(|_: &mut [i32], _: &[i32]| {}, false);
        let mut a = [1, 2];
        first.apply_left(&mut a, &[7, 8]);
        assert_eq!(a, [7, 8]);
        first.apply(&mut a, &[9, 9]);
        assert_eq!(a, [7, 8]);
        let min = Op::<f64>::MIN;
        let (mut right, mut left) = ([-0.0f64], [0.0f64]);
        min.apply(&mut left, &[-0.0]);
        min.apply_left(&mut right, &[0.0]);
        assert_eq!(left[0].to_bits(), right[0].to_bits());
        assert!(min.left_in_place() && !first.left_in_place());
    }

    #[test]
    fn builtins_on_integers_wrap_and_compare() {
        let sum = Op::<u8>::SUM;
        let mut a = [250u8, 1, 7];
        sum.apply(&mut a, &[10, 2, 8]);
        assert_eq!(a, [4, 3, 15]);
        let min = Op::<i32>::MIN;
        let mut b = [-5, 9];
        min.apply(&mut b, &[3, -9]);
        assert_eq!(b, [-5, -9]);
        let bxor = Op::<u16>::BXOR;
        let mut c = [0b1100u16];
        bxor.apply(&mut c, &[0b1010]);
        assert_eq!(c, [0b0110]);
        let prod = Op::<i64>::PROD;
        let mut d = [-3i64];
        prod.apply(&mut d, &[7]);
        assert_eq!(d, [-21]);
    }

    #[test]
    fn floats_refuse_bitwise_and_keep_nan() {
        assert!(Op::<f64>::BAND.check().is_err());
        assert!(Op::<f32>::MAX.check().is_ok());
        let max = Op::<f64>::MAX;
        let mut a = [1.0, f64::NAN, 2.0];
        max.apply(&mut a, &[3.0, 1.0, f64::NAN]);
        assert_eq!(a[0], 3.0);
        assert!(a[1].is_nan() && a[2].is_nan());
    }

    #[test]
    fn user_operations_run_and_say_whether_they_commute() {
        // 2x2 matrix product on [a, b, c, d]: not commutative.
        let op = Op::<i32>::user(
            |inout, input| {
                for (m, n) in inout.chunks_mut(4).zip(input.chunks(4)) {
                    let (a, b, c, d) = (m[0], m[1], m[2], m[3]);
                    m[0] = a * n[0] + b * n[2];
                    m[1] = a * n[1] + b * n[3];
                    m[2] = c * n[0] + d * n[2];
                    m[3] = c * n[1] + d * n[3];
                }
            },
            false,
        );
        assert!(!op.is_commutative());
        let mut m = [1, 1, 0, 1];
        op.apply(&mut m, &[1, 0, 1, 1]);
        assert_eq!(m, [2, 1, 1, 1]);
        assert!(op.check().is_ok());
    }
}
