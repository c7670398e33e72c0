//! Window elements: the `bytemuck::Pod` types remote atomics work on, and
//! the operations of `accumulate` and `fetch_and_op`.

use onesided_fabric::{AtomicOp, Datatype};

use crate::op::{Builtin, Op};
use crate::Error;

/// A type remote atomics work on: the integers of 8 to 64 bits and the
/// floats. `put`/`get` take any `bytemuck::Pod` type.
pub trait Element: bytemuck::Pod {
    /// Its libfabric element type.
    const DATATYPE: Datatype;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(impl Element for $t {
            const DATATYPE: Datatype = Datatype::$d;
        })*
    };
}

elements!(
    i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32,
    i64 => I64, u64 => U64, f32 => F32, f64 => F64,
);

/// The atomic operation for `op`, when atomics take it.
///
/// # Errors
/// [`Error::UnsupportedOp`] for the operations atomics do not take.
pub(crate) fn atomic<T>(op: &Op<T>, call: &'static str) -> Result<AtomicOp, Error> {
    match op {
        Op::Builtin(Builtin::Sum) => Ok(AtomicOp::Sum),
        Op::Builtin(Builtin::Min) => Ok(AtomicOp::Min),
        Op::Builtin(Builtin::Max) => Ok(AtomicOp::Max),
        Op::Builtin(Builtin::Replace) => Ok(AtomicOp::Replace),
        Op::Builtin(Builtin::NoOp) => Ok(AtomicOp::NoOp),
        other => Err(Error::UnsupportedOp {
            call,
            op: format!("{other:?}"),
        }),
    }
}

/// An element's bits as a little-endian `u64` pattern.
pub(crate) fn bits<T: Element>(value: T) -> u64 {
    let mut word = [0u8; 8];
    word[..size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&value));
    u64::from_le_bytes(word)
}

/// The element whose bits are `bits`.
pub(crate) fn from_bits<T: Element>(bits: u64) -> T {
    bytemuck::pod_read_unaligned(&bits.to_le_bytes()[..size_of::<T>()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        assert_eq!(from_bits::<i16>(bits(-5i16)), -5);
        assert_eq!(from_bits::<f64>(bits(2.5f64)), 2.5);
        assert_eq!(bits(-1i8), 0xff);
        assert_eq!(from_bits::<u32>(bits(7u32)), 7);
    }
}
