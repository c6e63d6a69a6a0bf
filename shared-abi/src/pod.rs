//! The marker traits for data that crosses between CPU and DPA.

use crate::{AbiError, MAX_IMM_DATA_LEN};
use core::mem::size_of;

/// Plain old data: a `#[repr(C)]` (or `#[repr(transparent)]`) type without padding bytes, for
/// which every bit pattern is a valid value.
///
/// Such a value can be copied to or from device memory byte for byte. Implement it with
/// [`pod_struct!`](crate::pod_struct), which checks the rules at compile time.
///
/// # Safety
/// The implementor guarantees the layout rules above: no padding (so viewing it as bytes never
/// reads uninitialised memory), no invalid bit patterns (so building it from bytes is sound), no
/// pointers or references (the value must mean the same thing on the other side).
pub unsafe trait Pod: Copy + 'static {}

/// A [`Pod`] type small enough to travel as MsgQ immediate data: at most
/// [`MAX_IMM_DATA_LEN`](crate::MAX_IMM_DATA_LEN) (32) bytes.
///
/// Implement it with [`impl_immediate!`](crate::impl_immediate), which checks the size at
/// compile time.
///
/// # Safety
/// Same as [`Pod`], and `size_of::<Self>() <= 32`.
pub unsafe trait Immediate: Pod {}

macro_rules! primitive_pod {
    ($($t:ty),*) => { $(
        // SAFETY: primitive integers have no padding and every bit pattern is valid.
        unsafe impl Pod for $t {}
    )* };
}
primitive_pod!(u8, u16, u32, u64, i8, i16, i32, i64);

// SAFETY: an array of Pod has no padding between elements (size is a multiple of alignment) and is
// valid for every bit pattern when its element is.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}

/// Declares a `#[repr(C)]` struct and implements [`Pod`] for it, proving at compile time that
/// every field is `Pod` and that the struct has no padding (its size is the sum of its fields).
///
/// ```
/// dpakit_abi::pod_struct! {
///     /// A pair of counters.
///     #[derive(Debug, PartialEq, Eq)]
///     pub struct Counters { pub sent: u64, pub received: u64 }
/// }
/// ```
///
/// A struct with a hole in it does not compile:
///
/// ```compile_fail
/// dpakit_abi::pod_struct! {
///     pub struct Holey { pub small: u8, pub big: u64 }
/// }
/// ```
#[macro_export]
macro_rules! pod_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $( $(#[$fmeta:meta])* $fvis:vis $field:ident : $fty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy)]
        $vis struct $name {
            $( $(#[$fmeta])* $fvis $field : $fty ),*
        }

        const _: () = {
            const fn field_is_pod<T: $crate::Pod>() {}
            $( field_is_pod::<$fty>(); )*
            $crate::__private::const_assert!(
                $crate::__private::size_of::<$name>() == 0 $( + $crate::__private::size_of::<$fty>() )*
            );
        };

        // SAFETY: repr(C), every field is Pod and the size assertion above proves there is no
        // padding, so every byte of the struct belongs to a field with no invalid bit patterns.
        unsafe impl $crate::Pod for $name {}
    };
}

/// Implements [`Immediate`] for [`Pod`] types, checking at compile time that each fits in one
/// 32-byte immediate.
///
/// ```compile_fail
/// dpakit_abi::pod_struct! { pub struct Big { pub words: [u64; 5] } }
/// dpakit_abi::impl_immediate!(Big);
/// ```
#[macro_export]
macro_rules! impl_immediate {
    ($($t:ty),* $(,)?) => { $(
        $crate::__private::const_assert!(
            $crate::__private::size_of::<$t>() <= $crate::MAX_IMM_DATA_LEN
        );
        // SAFETY: the type is Pod (required by the supertrait bound) and the assertion above
        // proves it fits in an immediate.
        unsafe impl $crate::Immediate for $t {}
    )* };
}

/// Views a [`Pod`] value as its bytes.
pub fn bytes_of<T: Pod>(value: &T) -> &[u8] {
    // SAFETY: T is Pod, so all size_of::<T>() bytes are initialised field bytes; the slice
    // borrows `value` and cannot outlive it.
    unsafe { core::slice::from_raw_parts((value as *const T).cast::<u8>(), size_of::<T>()) }
}

/// Reads an [`Immediate`] type from received immediate bytes.
///
/// Fails with [`AbiError::TooLong`] when `bytes` is longer than an immediate can be, and with
/// [`AbiError::SizeMismatch`] when its length is not exactly `size_of::<T>()`.
pub fn from_imm_bytes<T: Immediate>(bytes: &[u8]) -> Result<T, AbiError> {
    if bytes.len() > MAX_IMM_DATA_LEN {
        return Err(AbiError::TooLong { len: bytes.len() });
    }
    if bytes.len() != size_of::<T>() {
        return Err(AbiError::SizeMismatch {
            expected: size_of::<T>(),
            found: bytes.len(),
        });
    }
    // SAFETY: the length matches exactly, T is Pod so any bytes form a valid value, and
    // read_unaligned does not require `bytes` to be aligned for T.
    Ok(unsafe { bytes.as_ptr().cast::<T>().read_unaligned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::pod_struct! {
        #[derive(Debug, PartialEq, Eq)]
        struct Pair { a: u32, b: u32 }
    }
    crate::impl_immediate!(Pair);

    #[test]
    fn bytes_round_trip() {
        let p = Pair {
            a: 0x0102_0304,
            b: 0xa0b0_c0d0,
        };
        let bytes = bytes_of(&p);
        assert_eq!(bytes.len(), 8);
        assert_eq!(&bytes[..4], &0x0102_0304u32.to_ne_bytes());
        assert_eq!(from_imm_bytes::<Pair>(bytes), Ok(p));
    }

    #[test]
    fn wrong_length_is_rejected() {
        assert_eq!(
            from_imm_bytes::<Pair>(&[0; 7]),
            Err(AbiError::SizeMismatch {
                expected: 8,
                found: 7
            })
        );
        assert_eq!(
            from_imm_bytes::<Pair>(&[0; 33]),
            Err(AbiError::TooLong { len: 33 })
        );
    }
}
