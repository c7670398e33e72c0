//! Reducer bodies: the element type and the combining operation a
//! reduction applies (the spec's `ReducerBody`), with the built-in sum,
//! minimum and maximum.

use std::marker::PhantomData;

/// What a reduction combines: elements of a `Pod` type and an operation
/// that folds one partial result into another, element by element. The
/// operation must be commutative and associative: the tree is built in
/// the order processes become ready, so the order of combining is not
/// fixed.
pub trait ReducerBody: Send + Sync + 'static {
    /// The element type.
    type Element: bytemuck::Pod + Send + Sync;

    /// Folds `other` into `into` (the same length).
    fn combine(&self, into: &mut [Self::Element], other: &[Self::Element]);
}

/// Numbers the built-in bodies combine.
pub trait Number: bytemuck::Pod + PartialOrd + Send + Sync {
    /// `a + b` (wrapping for integers, as MPI's sum).
    fn add(a: Self, b: Self) -> Self;
}

macro_rules! integers {
    ($($t:ty)*) => {$(
        impl Number for $t {
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
        }
    )*};
}
integers!(i8 i16 i32 i64 u8 u16 u32 u64);

impl Number for f32 {
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
}

impl Number for f64 {
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
}

/// Whether `x` compares with nothing, itself included (a NaN).
fn unordered<T: PartialOrd>(x: T) -> bool {
    x.partial_cmp(&x).is_none()
}

macro_rules! builtin {
    ($(#[$doc:meta])* $name:ident, |$a:ident, $b:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<T>(PhantomData<fn() -> T>);

        impl<T> Default for $name<T> {
            fn default() -> Self {
                $name(PhantomData)
            }
        }

        impl<T: Number + 'static> ReducerBody for $name<T> {
            type Element = T;

            fn combine(&self, into: &mut [T], other: &[T]) {
                for ($a, &$b) in into.iter_mut().zip(other) {
                    *$a = $body;
                }
            }
        }
    };
}

builtin!(
    /// Element-wise sum.
    Sum, |a, b| T::add(*a, b)
);
builtin!(
    /// Element-wise minimum (a NaN on either side gives the other side
    /// for floats).
    Min, |a, b| if b < *a || unordered(*a) { b } else { *a }
);
builtin!(
    /// Element-wise maximum (as [`Min`] for NaNs).
    Max, |a, b| if b > *a || unordered(*a) { b } else { *a }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_combine_element_by_element() {
        let mut a = vec![1.0, 5.0, f64::NAN];
        Sum::<f64>::default().combine(&mut a[..2], &[2.0, -1.0]);
        assert_eq!(&a[..2], &[3.0, 4.0]);
        Min::<f64>::default().combine(&mut a, &[0.5, 9.0, 2.0]);
        assert_eq!(a, vec![0.5, 4.0, 2.0]);
        let mut m = vec![i32::MIN, 7];
        Max::<i32>::default().combine(&mut m, &[3, 2]);
        assert_eq!(m, vec![3, 7]);
        let mut w = vec![u8::MAX];
        Sum::<u8>::default().combine(&mut w, &[2]);
        assert_eq!(w, vec![1]);
    }
}
