//! Values that travel as one 64-bit word: an RPC kernel's parameters and return value (DOCA
//! passes each as a `uint64_t`), and the user data a task carries to its completion.

use crate::Pod;

/// A value carried in one 64-bit word. Every [`Pod`] type of at most 8 bytes is one — the
/// integers, the DOCA handles of [`handles`](crate::handles), small `pod_struct!`s — checked at
/// compile time where it is converted; `()` is the word 0.
///
/// The value's bytes are the word's low bytes, in memory order, the rest zero: the host and the
/// DPA (both little-endian) read them back the same way. A signed integer is not sign-extended;
/// [`Word::from_word`] of what [`Word::into_word`] made is always the value.
///
/// ```
/// use dpakit_abi::Word;
/// use dpakit_abi::handles::MmapHandle;
///
/// assert_eq!(MmapHandle(7).into_word(), 7);
/// assert_eq!(i32::from_word((-5i32).into_word()), -5);
/// ```
pub trait Word: Copy {
    /// The word carrying `self`.
    fn into_word(self) -> u64;
    /// The value `word` carries (its low bytes; the rest are ignored).
    fn from_word(word: u64) -> Self;
}

impl<T: Pod> Word for T {
    fn into_word(self) -> u64 {
        const { assert!(size_of::<T>() <= 8, "a Word is at most 8 bytes") };
        let mut word = 0u64;
        // SAFETY: T is Pod (no padding, so every byte read is initialised) and at most 8 bytes,
        // so its bytes fit in the word's; the two do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(
                (&self as *const T).cast::<u8>(),
                (&mut word as *mut u64).cast::<u8>(),
                size_of::<T>(),
            );
        }
        word
    }

    fn from_word(word: u64) -> T {
        const { assert!(size_of::<T>() <= 8, "a Word is at most 8 bytes") };
        // SAFETY: T is Pod, valid for any bytes, and at most the word's 8 bytes are read
        // (unaligned: T may be more aligned than the word's address guarantees for its size).
        unsafe { (&word as *const u64).cast::<T>().read_unaligned() }
    }
}

impl Word for () {
    fn into_word(self) -> u64 {
        0
    }

    fn from_word(_word: u64) {}
}

/// An RPC's arguments as a tuple of [`Word`]s, at most four (DOCA's RPC limit).
pub trait WordTuple: Copy {
    /// How many words.
    const LEN: usize;
    /// The words, in order; entries past `LEN` are zero.
    fn into_words(self) -> [u64; 4];
}

macro_rules! word_tuples {
    ($( $n:literal ($($t:ident),*) ),*) => { $(
        impl<$($t: Word),*> WordTuple for ($($t,)*) {
            const LEN: usize = $n;
            #[allow(non_snake_case, unused_mut, unused_variables)]
            fn into_words(self) -> [u64; 4] {
                let ($($t,)*) = self;
                let mut words = [0u64; 4];
                let values: &[u64] = &[$($t.into_word()),*];
                words[..values.len()].copy_from_slice(values);
                words
            }
        }
    )* };
}
word_tuples!(0(), 1(A), 2(A, B), 3(A, B, C), 4(A, B, C, D));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::{MmapHandle, SyncEventHandle};

    crate::pod_struct! {
        #[derive(Debug, PartialEq, Eq)]
        struct Pair {
            a: u32,
            b: u32,
        }
    }

    #[test]
    fn each_value_comes_back_from_its_word() {
        assert_eq!(u64::MAX.into_word(), u64::MAX);
        assert_eq!(0xabu8.into_word(), 0xab);
        assert_eq!(i64::from_word((-1i64).into_word()), -1);
        assert_eq!(i16::from_word((-300i16).into_word()), -300);
        assert_eq!(SyncEventHandle(9).into_word(), 9);
        assert_eq!(MmapHandle::from_word(0xffff_ffff_0000_0005), MmapHandle(5));
        let pair = Pair { a: 1, b: 2 };
        assert_eq!(pair.into_word(), 1 | 2 << 32);
        assert_eq!(Pair::from_word(pair.into_word()), pair);
        assert_eq!(().into_word(), 0);
    }

    #[test]
    fn tuples_become_words_in_order() {
        assert_eq!(<()>::LEN, 0);
        assert_eq!(().into_words(), [0; 4]);
        assert_eq!((SyncEventHandle(3), 4u64, 5u32).into_words(), [3, 4, 5, 0]);
        assert_eq!(<(u8, u8, u8, u8)>::LEN, 4);
    }
}
