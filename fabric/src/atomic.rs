//! Typed atomics: element types and operations as plain data, and the
//! arithmetic the on-host path (CPU atomics on mapped memory) performs, so
//! that it computes exactly what the provider computes.
//!
//! Values travel as little-endian bit patterns in a `u64` (the low `size()`
//! bytes), whatever the element type.

/// An element type of a remote atomic (libfabric's `fi_datatype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Datatype {
    /// `i8`
    I8,
    /// `u8`
    U8,
    /// `i16`
    I16,
    /// `u16`
    U16,
    /// `i32`
    I32,
    /// `u32`
    U32,
    /// `i64`
    I64,
    /// `u64`
    U64,
    /// `f32`
    F32,
    /// `f64`
    F64,
}

/// What an atomic does with the target element `t` and the operand `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `t = t + x` (wrapping for integers).
    Sum,
    /// `t = min(t, x)`.
    Min,
    /// `t = max(t, x)`.
    Max,
    /// `t = x`.
    Replace,
    /// `t` unchanged (with a fetch: an atomic read).
    NoOp,
}

impl Datatype {
    /// Every element type, in declaration order (`ALL[d as usize] == d`).
    pub const ALL: [Datatype; 10] = [
        Datatype::I8,
        Datatype::U8,
        Datatype::I16,
        Datatype::U16,
        Datatype::I32,
        Datatype::U32,
        Datatype::I64,
        Datatype::U64,
        Datatype::F32,
        Datatype::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Datatype::I8 | Datatype::U8 => 1,
            Datatype::I16 | Datatype::U16 => 2,
            Datatype::I32 | Datatype::U32 | Datatype::F32 => 4,
            Datatype::I64 | Datatype::U64 | Datatype::F64 => 8,
        }
    }

    /// libfabric's number for it.
    pub(crate) fn fi(self) -> fabric_sys::fi_datatype {
        use fabric_sys as sys;
        match self {
            Datatype::I8 => sys::FI_INT8,
            Datatype::U8 => sys::FI_UINT8,
            Datatype::I16 => sys::FI_INT16,
            Datatype::U16 => sys::FI_UINT16,
            Datatype::I32 => sys::FI_INT32,
            Datatype::U32 => sys::FI_UINT32,
            Datatype::I64 => sys::FI_INT64,
            Datatype::U64 => sys::FI_UINT64,
            Datatype::F32 => sys::FI_FLOAT,
            Datatype::F64 => sys::FI_DOUBLE,
        }
    }

    /// The mask of the low `size()` bytes.
    fn mask(self) -> u64 {
        match self.size() {
            8 => u64::MAX,
            n => (1u64 << (8 * n)) - 1,
        }
    }
}

impl AtomicOp {
    /// Every operation, in declaration order (`ALL[o as usize] == o`).
    pub const ALL: [AtomicOp; 5] = [
        AtomicOp::Sum,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::Replace,
        AtomicOp::NoOp,
    ];

    /// libfabric's number for it.
    pub(crate) fn fi(self) -> fabric_sys::fi_op {
        use fabric_sys as sys;
        match self {
            AtomicOp::Sum => sys::FI_SUM,
            AtomicOp::Min => sys::FI_MIN,
            AtomicOp::Max => sys::FI_MAX,
            AtomicOp::Replace => sys::FI_ATOMIC_WRITE,
            AtomicOp::NoOp => sys::FI_ATOMIC_READ,
        }
    }
}

/// The new value of an element holding `current` after `op` with
/// `operand`, both as bit patterns of `datatype` (higher bits ignored, and
/// zero in the result).
pub fn apply(datatype: Datatype, op: AtomicOp, current: u64, operand: u64) -> u64 {
    use std::cmp::Ordering::{Greater, Less};
    let (t, x) = (current & datatype.mask(), operand & datatype.mask());
    // Ordering of t against x; NaN compares as unordered and keeps `t`,
    // as a `t < x ? t : x` comparison does.
    let order = match datatype {
        Datatype::I8 => (t as u8 as i8).partial_cmp(&(x as u8 as i8)),
        Datatype::I16 => (t as u16 as i16).partial_cmp(&(x as u16 as i16)),
        Datatype::I32 => (t as u32 as i32).partial_cmp(&(x as u32 as i32)),
        Datatype::I64 => (t as i64).partial_cmp(&(x as i64)),
        Datatype::F32 => f32::from_bits(t as u32).partial_cmp(&f32::from_bits(x as u32)),
        Datatype::F64 => f64::from_bits(t).partial_cmp(&f64::from_bits(x)),
        Datatype::U8 | Datatype::U16 | Datatype::U32 | Datatype::U64 => t.partial_cmp(&x),
    };
    let result = match op {
        AtomicOp::NoOp => t,
        AtomicOp::Replace => x,
        AtomicOp::Min => match order {
            Some(Greater) => x,
            _ => t,
        },
        AtomicOp::Max => match order {
            Some(Less) => x,
            _ => t,
        },
        AtomicOp::Sum => match datatype {
            Datatype::F32 => {
                u64::from((f32::from_bits(t as u32) + f32::from_bits(x as u32)).to_bits())
            }
            Datatype::F64 => (f64::from_bits(t) + f64::from_bits(x)).to_bits(),
            _ => t.wrapping_add(x),
        },
    };
    result & datatype.mask()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_wraps_within_the_type() {
        assert_eq!(apply(Datatype::U8, AtomicOp::Sum, 250, 10), 4);
        assert_eq!(apply(Datatype::U64, AtomicOp::Sum, u64::MAX, 2), 1);
        assert_eq!(
            apply(Datatype::I16, AtomicOp::Sum, (-3i16) as u16 as u64, 1),
            (-2i16) as u16 as u64
        );
    }

    #[test]
    fn min_max_respect_sign_and_floats() {
        let m1 = (-1i32) as u32 as u64;
        assert_eq!(apply(Datatype::I32, AtomicOp::Min, m1, 5), m1);
        assert_eq!(apply(Datatype::U32, AtomicOp::Min, m1, 5), 5);
        assert_eq!(apply(Datatype::I32, AtomicOp::Max, m1, 5), 5);
        let f = |v: f64| v.to_bits();
        assert_eq!(apply(Datatype::F64, AtomicOp::Max, f(-2.5), f(1.5)), f(1.5));
        assert_eq!(
            apply(Datatype::F64, AtomicOp::Min, f(-2.5), f(1.5)),
            f(-2.5)
        );
        assert_eq!(
            apply(Datatype::F64, AtomicOp::Sum, f(0.5), f(0.25)),
            f(0.75)
        );
        let g = |v: f32| u64::from(v.to_bits());
        assert_eq!(apply(Datatype::F32, AtomicOp::Sum, g(1.5), g(2.0)), g(3.5));
        assert_eq!(
            apply(Datatype::F32, AtomicOp::Max, g(f32::NAN), g(2.0)),
            g(f32::NAN)
        );
    }

    #[test]
    fn all_lists_each_in_declaration_order() {
        for (i, d) in Datatype::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i);
        }
        for (i, o) in AtomicOp::ALL.into_iter().enumerate() {
            assert_eq!(o as usize, i);
        }
    }

    #[test]
    fn replace_and_noop() {
        assert_eq!(apply(Datatype::U16, AtomicOp::Replace, 7, 0x1_0009), 9);
        assert_eq!(apply(Datatype::I64, AtomicOp::NoOp, 7, 9), 7);
    }
}
