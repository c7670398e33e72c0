//! Operations of reductions: the predefined ones on onesided's, the
//! location operations (`MPI_MINLOC`, `MPI_MAXLOC`) on the pair types, and
//! the program's own (`MPI_Op_create`), whose function computes
//! `inoutvec[i] = invec[i] op inoutvec[i]` with the lower ranks' operands
//! in `invec`, as MPI's.

use std::ffi::{c_int, c_void};

use onesided::{Op, Reducible};

use crate::abi::{self, err, op, Handle};
use crate::datatype::Element;
use crate::errors::{finish, Fail};
use crate::{mpi, ptr, runtime};

/// `MPI_User_function`.
pub(crate) type UserFunction =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Handle);

/// An operation the program made.
#[derive(Clone, Copy)]
pub(crate) struct UserOp {
    f: UserFunction,
    commute: bool,
}

impl UserOp {
    /// Calls the function: `inoutvec[i] = invec[i] op inoutvec[i]` for
    /// `len` elements of `datatype`.
    ///
    /// # Safety
    /// Both buffers hold `len` elements of `datatype` in its layout.
    pub(crate) unsafe fn call(
        &self,
        invec: *mut c_void,
        inoutvec: *mut c_void,
        len: c_int,
        datatype: Handle,
    ) {
        let (mut len, mut datatype) = (len, datatype);
        // SAFETY: the program's MPI_User_function, called as the standard
        // says (this function's contract).
        unsafe { (self.f)(invec, inoutvec, &mut len, &mut datatype) };
    }
}

/// An element type reductions combine: the numbers, and the pairs of the
/// location operations.
pub(crate) trait Typed: Reducible {
    /// `MPI_MAXLOC` (`max`) or `MPI_MINLOC` on this type, when it is a pair.
    fn located(_max: bool) -> Option<Op<Self>> {
        None
    }
}

macro_rules! numbers {
    ($($t:ty),*) => {$(impl Typed for $t {})*};
}
numbers!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// The pair types: a value and its index, laid out as C lays the
/// structs of the pair datatypes (padding named, so that they are `Pod`).
macro_rules! pairs {
    ($($name:ident { $($field:ident: $ty:ty),* } = $text:literal;)*) => {$(
        /// A pair of a location operation (fields `value` and `index`).
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
        pub(crate) struct $name {
            $($field: $ty,)*
        }

        // SAFETY: plain numbers in a repr(C) struct whose padding is a named
        // field: every bit pattern is a value, and all zeros is one.
        unsafe impl bytemuck::Zeroable for $name {}
        // SAFETY: as above; no implicit padding, Copy, 'static.
        unsafe impl bytemuck::Pod for $name {}

        impl Reducible for $name {
            const NAME: &'static str = $text;

            fn combine(_op: onesided::rma::Builtin, _a: Self, _b: Self) -> Option<Self> {
                None
            }
        }

        impl Typed for $name {
            fn located(max: bool) -> Option<Op<Self>> {
                Some(Op::user(
                    move |inout: &mut [Self], input: &[Self]| {
                        for (a, b) in inout.iter_mut().zip(input) {
                            let better = match max {
                                true => b.value > a.value,
                                false => b.value < a.value,
                            };
                            if better || (b.value == a.value && b.index < a.index) {
                                *a = *b;
                            }
                        }
                    },
                    true,
                ))
            }
        }
    )*};
}

pairs! {
    FloatInt { value: f32, index: i32 } = "float_int";
    DoubleInt { value: f64, index: i32, pad: i32 } = "double_int";
    LongInt { value: i64, index: i32, pad: i32 } = "long_int";
    TwoInt { value: i32, index: i32 } = "2int";
    ShortInt { value: i16, pad: i16, index: i32 } = "short_int";
    TwoReal { value: f32, index: f32 } = "2real";
    TwoDouble { value: f64, index: f64 } = "2double";
}

/// Operation `handle` on elements of `T` (of datatype `datatype`, which a
/// program's function is told).
///
/// # Errors
/// `MPI_ERR_OP` for an invalid handle or one that does not apply to the
/// type (bitwise ones on floats, the location ones off the pairs).
pub(crate) fn of<T: Typed>(
    handle: Handle,
    element: Element,
    datatype: Handle,
) -> Result<Op<T>, Fail> {
    let integer = matches!(
        element,
        Element::I8
            | Element::U8
            | Element::I16
            | Element::U16
            | Element::I32
            | Element::U32
            | Element::I64
            | Element::U64
    );
    let logical = |f: fn(bool, bool) -> bool| {
        Op::user(
            move |inout: &mut [T], input: &[T]| {
                let zero = T::zeroed();
                let mut one = T::zeroed();
                bytemuck::bytes_of_mut(&mut one)[0] = 1;
                for (a, b) in inout.iter_mut().zip(input) {
                    let (x, y) = (
                        bytemuck::bytes_of(a) != bytemuck::bytes_of(&zero),
                        bytemuck::bytes_of(b) != bytemuck::bytes_of(&zero),
                    );
                    *a = if f(x, y) { one } else { zero };
                }
            },
            true,
        )
    };
    let refused = || {
        Fail::new(
            err::OP,
            format!("operation {handle:#x} on datatype {datatype:#x}"),
        )
    };
    Ok(match handle {
        op::SUM if integer || matches!(element, Element::F32 | Element::F64) => Op::SUM,
        op::PROD if integer || matches!(element, Element::F32 | Element::F64) => Op::PROD,
        op::MIN if integer || matches!(element, Element::F32 | Element::F64) => Op::MIN,
        op::MAX if integer || matches!(element, Element::F32 | Element::F64) => Op::MAX,
        op::BAND if integer => Op::BAND,
        op::BOR if integer => Op::BOR,
        op::BXOR if integer => Op::BXOR,
        op::LAND if integer => logical(|x, y| x && y),
        op::LOR if integer => logical(|x, y| x || y),
        op::LXOR if integer => logical(|x, y| x != y),
        op::MINLOC => T::located(false).ok_or_else(refused)?,
        op::MAXLOC => T::located(true).ok_or_else(refused)?,
        _ => {
            let user = runtime::with(|r| Ok(r.ops.get(handle).copied()))?.ok_or_else(refused)?;

            let UserOp { f, commute } = user;
            // onesided combines `inout = inout op in`, `inout` holding the
            // lower ranks' operands; MPI's function computes `inoutvec =
            // invec op inoutvec`. A commutative one is called on the two
            // as they are; another on the lower ranks' as `invec` and a
            // copy of the higher ranks' as `inoutvec`, copied back.
            Op::user(
                move |inout: &mut [T], input: &[T]| {
                    let mut len = input.len() as c_int;
                    let mut datatype = datatype;
                    let mut call = |invec: *const T, inoutvec: *mut T| {
                        // SAFETY: the program's MPI_User_function, called as
                        // the standard says: len elements of the datatype in
                        // each vector, the first read, the second combined
                        // into.
                        unsafe {
                            f(
                                invec.cast_mut().cast(),
                                inoutvec.cast(),
                                &mut len,
                                &mut datatype,
                            )
                        }
                    };
                    if commute {
                        call(input.as_ptr(), inout.as_mut_ptr());
                    } else {
                        let mut higher = input.to_vec();
                        call(inout.as_ptr(), higher.as_mut_ptr());
                        inout.copy_from_slice(&higher);
                    }
                },
                commute,
            )
        }
    })
}

mpi! {
    /// An operation of the program's function; `commute` says whether
    /// operands may be combined in any order.
    fn MPI_Op_create / PMPI_Op_create(function: Option<UserFunction>, commute: c_int, op: *mut Handle) -> c_int {
        let result = match function {
            None => Err(Fail::new(err::ARG, "the function is NULL")),
            Some(f) => {
                let user = UserOp { f, commute: commute != 0 };
                runtime::with(|r| Ok(r.ops.insert(user)))
                    // SAFETY: as the call's contract.
                    .and_then(|h| unsafe { ptr::write(op, h, "op") })
            }
        };
        finish("MPI_Op_create", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Frees an operation of the program's; the handle becomes `MPI_OP_NULL`.
    fn MPI_Op_free / PMPI_Op_free(op: *mut Handle) -> c_int {
        // SAFETY: as the call's contract.
        let result = unsafe { ptr::read(op, "op") }.and_then(|h| {
            runtime::with(|r| {
                (r.ops.remove(h).map(drop))
                    .ok_or_else(|| Fail::new(err::OP, format!("cannot free operation {h:#x}")))
            })?;
            // SAFETY: as the call's contract.
            unsafe { ptr::write(op, abi::op::NULL, "op") }
        });
        finish("MPI_Op_free", abi::comm::WORLD, result)
    }
}

mpi! {
    /// Whether an operation is commutative.
    fn MPI_Op_commutative / PMPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
        let result = match (abi::op::SUM..=abi::op::NO_OP).contains(&op) {
            true => Ok(true),
            false => runtime::with(|r| {
                (r.ops.get(op).map(|u| u.commute))
                    .ok_or_else(|| Fail::new(err::OP, format!("invalid operation {op:#x}")))
            }),
        }
        // SAFETY: as the call's contract.
        .and_then(|c| unsafe { ptr::write(commute, c_int::from(c), "commute") });
        finish("MPI_Op_commutative", abi::comm::WORLD, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply<T: Typed>(op: Op<T>, inout: &mut [T], input: &[T]) {
        match op {
            Op::User { f, .. } => f(inout, input),
            Op::Builtin(_) => panic!("a user operation"),
        }
    }

    #[test]
    fn location_operations_take_the_lower_index_on_ties() {
        let mut inout = [
            DoubleInt {
                value: 1.0,
                index: 3,
                pad: 0,
            },
            DoubleInt {
                value: 5.0,
                index: 1,
                pad: 0,
            },
        ];
        let input = [
            DoubleInt {
                value: 1.0,
                index: 2,
                pad: 0,
            },
            DoubleInt {
                value: 4.0,
                index: 0,
                pad: 0,
            },
        ];
        apply(DoubleInt::located(true).unwrap(), &mut inout, &input);
        assert_eq!((inout[0].index, inout[1].index), (2, 1));
        let mut low = [TwoInt { value: 7, index: 9 }];
        apply(
            TwoInt::located(false).unwrap(),
            &mut low,
            &[TwoInt { value: 3, index: 4 }],
        );
        assert_eq!(low[0], TwoInt { value: 3, index: 4 });
        assert_eq!(size_of::<ShortInt>(), 8);
        assert_eq!(size_of::<DoubleInt>(), 16);
        assert!(f64::located(true).is_none());
    }
}
