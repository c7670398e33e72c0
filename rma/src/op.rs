//! Operations (`MPI_Op`): one type for the atomics of windows and the
//! reductions of collectives. MPI's predefined operations are plain
//! values ([`Op::SUM`], [`Op::MAX`], ...); a user-defined one is a
//! function ([`Op::user`]). Which operations a call takes is its business:
//! atomics take `SUM`, `MIN`, `MAX`, `REPLACE` and `NO_OP`; reductions take
//! the arithmetic and bitwise ones and user-defined ones.

use std::sync::Arc;

/// A predefined operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// Sum (wrapping for integers).
    Sum,
    /// Product (wrapping for integers).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers only).
    Band,
    /// Bitwise or (integers only).
    Bor,
    /// Bitwise exclusive or (integers only).
    Bxor,
    /// The operand replaces the target (`MPI_REPLACE`; atomics only).
    Replace,
    /// The target is left as it is (`MPI_NO_OP`; atomics only: with a
    /// fetch, an atomic read).
    NoOp,
}

/// A user-defined reduction: `f(inout, in)` combines `in` into `inout`
/// element-wise (the `MPI_User_function` shape).
pub type UserFn<T> = Arc<dyn Fn(&mut [T], &[T]) + Send + Sync>;

/// An operation on elements of `T`.
///
/// ```
/// use onesided_rma::Op;
///
/// let sum: Op<f64> = Op::SUM;
/// assert!(sum.is_commutative());
/// // 2x2 matrix products: a user-defined operation that does not commute.
/// let product = Op::<i64>::user(
///     |inout, input| {
///         for (m, n) in inout.chunks_mut(4).zip(input.chunks(4)) {
///             let (a, b, c, d) = (m[0], m[1], m[2], m[3]);
///             m.copy_from_slice(&[
///                 a * n[0] + b * n[2],
///                 a * n[1] + b * n[3],
///                 c * n[0] + d * n[2],
///                 c * n[1] + d * n[3],
///             ]);
///         }
///     },
///     false,
/// );
/// assert!(!product.is_commutative());
/// ```
#[derive(Clone)]
pub enum Op<T> {
    /// A predefined operation.
    Builtin(Builtin),
    /// A user-defined one, and whether it is commutative.
    User {
        /// The function.
        f: UserFn<T>,
        /// Whether operands may be combined in any order.
        commutative: bool,
    },
}

impl<T> Op<T> {
    /// `MPI_SUM`.
    pub const SUM: Op<T> = Op::Builtin(Builtin::Sum);
    /// `MPI_PROD`.
    pub const PROD: Op<T> = Op::Builtin(Builtin::Prod);
    /// `MPI_MIN`.
    pub const MIN: Op<T> = Op::Builtin(Builtin::Min);
    /// `MPI_MAX`.
    pub const MAX: Op<T> = Op::Builtin(Builtin::Max);
    /// `MPI_BAND`.
    pub const BAND: Op<T> = Op::Builtin(Builtin::Band);
    /// `MPI_BOR`.
    pub const BOR: Op<T> = Op::Builtin(Builtin::Bor);
    /// `MPI_BXOR`.
    pub const BXOR: Op<T> = Op::Builtin(Builtin::Bxor);
    /// `MPI_REPLACE`.
    pub const REPLACE: Op<T> = Op::Builtin(Builtin::Replace);
    /// `MPI_NO_OP`.
    pub const NO_OP: Op<T> = Op::Builtin(Builtin::NoOp);

    /// A user-defined operation: `f(inout, in)` combines `in` into
    /// `inout` element-wise; `commutative` says whether operands may be
    /// combined in any order (algorithms that reorder them are chosen only
    /// then).
    pub fn user(f: impl Fn(&mut [T], &[T]) + Send + Sync + 'static, commutative: bool) -> Op<T> {
        Op::User {
            f: Arc::new(f),
            commutative,
        }
    }

    /// Whether operands may be combined in any order.
    pub fn is_commutative(&self) -> bool {
        match self {
            Op::Builtin(_) => true,
            Op::User { commutative, .. } => *commutative,
        }
    }
}

impl<T> std::fmt::Debug for Op<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Builtin(b) => write!(f, "{b:?}"),
            Op::User { commutative, .. } => write!(f, "User {{ commutative: {commutative} }}"),
        }
    }
}
