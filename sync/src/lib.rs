//! Atomics and cells for the soft device's lock-free code: its only way to atomics, and the
//! wake-up handshake ([`wake`]) built on them.
//!
//! Everything comes from `loom` under `cfg(loom)`, so the same code can be model-checked, and
//! from `core` otherwise. `UnsafeCell` has loom's shape (`with` / `with_mut` instead of `get`)
//! in both builds, which lets loom see every access to cell contents.
//!
//! The `core` atomics are wrapped in newtypes of this module: clippy's `disallowed-types`
//! (workspace `clippy.toml`) keeps `core`/`std` atomics out of the rest of the crate, and a
//! re-export would still name the disallowed type. [`plain`] has the same wrappers in every
//! build, for what is no protocol between threads (ids, statistics, configuration) and for
//! statics, which loom's atomics cannot initialise in a const context.

// A facade: not every item has a user in every build.
#![allow(unused_imports, dead_code)]
// The one place the std atomics are named.
#![allow(clippy::disallowed_types)]

pub mod wake;

#[cfg(loom)]
pub use loom::cell::UnsafeCell;
#[cfg(loom)]
pub use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, fence,
};

#[cfg(loom)]
pub use loom::sync::Mutex;

#[cfg(not(loom))]
pub use core::sync::atomic::fence;
/// A lock held across atomics of a model: loom's under `cfg(loom)`, whose threads share one OS
/// thread and would deadlock on a std one.
#[cfg(not(loom))]
pub use std::sync::Mutex;
#[cfg(not(loom))]
pub use wrapped::{AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize};

pub use core::sync::atomic::{Ordering, compiler_fence};

/// Atomics loom never models, in every build: ids, statistics and configuration values that no
/// thread waits on or publishes data through, and statics. Never a protocol between threads:
/// those use the atomics at the root of this module.
pub mod plain {
    pub use super::wrapped::{
        AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize,
    };
}

/// `core`'s atomics behind newtypes with the same methods (those the crate uses).
mod wrapped {
    use core::sync::atomic::{self as a, Ordering};

    macro_rules! atomic_int {
        ($($name:ident($int:ty)),* $(,)?) => {$(
            #[derive(Debug, Default)]
            #[repr(transparent)]
            pub struct $name(a::$name);

            impl $name {
                #[inline]
                pub const fn new(v: $int) -> Self {
                    Self(a::$name::new(v))
                }
                #[inline]
                pub fn load(&self, order: Ordering) -> $int {
                    self.0.load(order)
                }
                #[inline]
                pub fn store(&self, v: $int, order: Ordering) {
                    self.0.store(v, order)
                }
                #[inline]
                pub fn swap(&self, v: $int, order: Ordering) -> $int {
                    self.0.swap(v, order)
                }
                #[inline]
                pub fn compare_exchange(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.0.compare_exchange(current, new, success, failure)
                }
                #[inline]
                pub fn compare_exchange_weak(
                    &self,
                    current: $int,
                    new: $int,
                    success: Ordering,
                    failure: Ordering,
                ) -> Result<$int, $int> {
                    self.0.compare_exchange_weak(current, new, success, failure)
                }
                #[inline]
                pub fn fetch_add(&self, v: $int, order: Ordering) -> $int {
                    self.0.fetch_add(v, order)
                }
                #[inline]
                pub fn fetch_sub(&self, v: $int, order: Ordering) -> $int {
                    self.0.fetch_sub(v, order)
                }
                #[inline]
                pub fn fetch_and(&self, v: $int, order: Ordering) -> $int {
                    self.0.fetch_and(v, order)
                }
                #[inline]
                pub fn fetch_or(&self, v: $int, order: Ordering) -> $int {
                    self.0.fetch_or(v, order)
                }
                #[inline]
                pub fn fetch_max(&self, v: $int, order: Ordering) -> $int {
                    self.0.fetch_max(v, order)
                }
            }
        )*};
    }

    atomic_int!(
        AtomicU8(u8),
        AtomicU16(u16),
        AtomicU32(u32),
        AtomicU64(u64),
        AtomicUsize(usize),
    );

    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub struct AtomicBool(a::AtomicBool);

    impl AtomicBool {
        #[inline]
        pub const fn new(v: bool) -> Self {
            Self(a::AtomicBool::new(v))
        }
        #[inline]
        pub fn load(&self, order: Ordering) -> bool {
            self.0.load(order)
        }
        #[inline]
        pub fn store(&self, v: bool, order: Ordering) {
            self.0.store(v, order)
        }
        #[inline]
        pub fn swap(&self, v: bool, order: Ordering) -> bool {
            self.0.swap(v, order)
        }
        #[inline]
        pub fn compare_exchange(
            &self,
            current: bool,
            new: bool,
            success: Ordering,
            failure: Ordering,
        ) -> Result<bool, bool> {
            self.0.compare_exchange(current, new, success, failure)
        }
    }

    #[repr(transparent)]
    pub struct AtomicPtr<T>(a::AtomicPtr<T>);

    // By hand: derives would require `T: Debug` / `T: Default`.
    impl<T> core::fmt::Debug for AtomicPtr<T> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            self.0.fmt(f)
        }
    }

    impl<T> Default for AtomicPtr<T> {
        fn default() -> Self {
            Self::new(core::ptr::null_mut())
        }
    }

    impl<T> AtomicPtr<T> {
        #[inline]
        pub const fn new(p: *mut T) -> Self {
            Self(a::AtomicPtr::new(p))
        }
        #[inline]
        pub fn load(&self, order: Ordering) -> *mut T {
            self.0.load(order)
        }
        #[inline]
        pub fn store(&self, p: *mut T, order: Ordering) {
            self.0.store(p, order)
        }
        #[inline]
        pub fn swap(&self, p: *mut T, order: Ordering) -> *mut T {
            self.0.swap(p, order)
        }
        #[inline]
        pub fn compare_exchange(
            &self,
            current: *mut T,
            new: *mut T,
            success: Ordering,
            failure: Ordering,
        ) -> Result<*mut T, *mut T> {
            self.0.compare_exchange(current, new, success, failure)
        }
    }
}

/// Runs a loom model with at most `preemptions` preemptions per execution (`LOOM_MAX_PREEMPTIONS`
/// overrides it). Bounded models explore every interleaving with that many forced switches,
/// which finds the bugs of small protocols in seconds instead of minutes.
#[cfg(loom)]
pub fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound.get_or_insert(preemptions);
    builder.check(f);
}

/// A busy-wait hint. Under loom it yields, which loom needs to explore spin loops at all.
#[inline]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// `core::cell::UnsafeCell` with loom's API: access goes through a closure given a raw pointer.
#[cfg(not(loom))]
#[derive(Debug, Default)]
#[repr(transparent)]
pub struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    #[inline]
    pub const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer for reading the contents.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer for writing the contents.
    #[inline]
    pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Keeps `T` on cache lines of its own. 128 bytes because x86's adjacent-line prefetcher
/// fetches lines in pairs, and some Arm cores have 128-byte lines.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct CachePadded<T>(pub T);

impl<T> core::ops::Deref for CachePadded<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Loads and stores of an emulated processor (the DPA interpreter) in memory it shares with
/// other threads: DPA memory, mmaps, message rings. Every access is one naturally aligned atomic
/// access of its size, so a kernel reading memory the host writes at the same time is a race
/// of the emulated program, never a data race of the soft device. Plain (not modelled by loom):
/// the emulated program's own protocols are not the soft device's.
pub mod emulated {
    use core::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64, Ordering};

    /// Loads `size` (1, 2, 4 or 8) bytes at `addr`, zero-extended.
    ///
    /// # Safety
    /// `addr` is aligned to `size` and valid for reads of `size` bytes.
    #[inline]
    pub unsafe fn load(addr: u64, size: u8) -> u64 {
        let p = addr as usize;
        // SAFETY: valid and aligned by the caller's contract; an atomic may alias other accesses.
        unsafe {
            match size {
                1 => u64::from(AtomicU8::from_ptr(p as *mut u8).load(Ordering::Relaxed)),
                2 => u64::from(AtomicU16::from_ptr(p as *mut u16).load(Ordering::Relaxed)),
                4 => u64::from(AtomicU32::from_ptr(p as *mut u32).load(Ordering::Relaxed)),
                _ => AtomicU64::from_ptr(p as *mut u64).load(Ordering::Relaxed),
            }
        }
    }

    /// Stores the low `size` bytes of `value` at `addr`.
    ///
    /// # Safety
    /// `addr` is aligned to `size` and valid for writes of `size` bytes.
    #[inline]
    pub unsafe fn store(addr: u64, size: u8, value: u64) {
        let p = addr as usize;
        // SAFETY: as in `load`.
        unsafe {
            match size {
                1 => AtomicU8::from_ptr(p as *mut u8).store(value as u8, Ordering::Relaxed),
                2 => AtomicU16::from_ptr(p as *mut u16).store(value as u16, Ordering::Relaxed),
                4 => AtomicU32::from_ptr(p as *mut u32).store(value as u32, Ordering::Relaxed),
                _ => AtomicU64::from_ptr(p as *mut u64).store(value, Ordering::Relaxed),
            }
        }
    }

    /// Replaces the 4- or 8-byte word at `addr` with `f(old)` atomically (a compare-exchange
    /// loop); returns the old value, zero-extended.
    ///
    /// # Safety
    /// As for `store`, with `size` 4 or 8.
    #[inline]
    pub unsafe fn update(addr: u64, size: u8, f: impl Fn(u64) -> u64) -> u64 {
        let p = addr as usize;
        let o = Ordering::SeqCst;
        // SAFETY: as in `load`.
        unsafe {
            if size == 4 {
                let a = AtomicU32::from_ptr(p as *mut u32);
                let old = a.fetch_update(o, o, |x| Some(f(u64::from(x)) as u32));
                u64::from(old.unwrap_or_else(|x| x))
            } else {
                let a = AtomicU64::from_ptr(p as *mut u64);
                a.fetch_update(o, o, |x| Some(f(x))).unwrap_or_else(|x| x)
            }
        }
    }

    /// Stores `new` at `addr` if it holds `expected` (4 or 8 bytes); whether it did.
    ///
    /// # Safety
    /// As for `rmw`.
    #[inline]
    pub unsafe fn compare_exchange(addr: u64, size: u8, expected: u64, new: u64) -> bool {
        let p = addr as usize;
        let o = Ordering::SeqCst;
        // SAFETY: as in `load`.
        unsafe {
            if size == 4 {
                AtomicU32::from_ptr(p as *mut u32)
                    .compare_exchange(expected as u32, new as u32, o, o)
                    .is_ok()
            } else {
                AtomicU64::from_ptr(p as *mut u64)
                    .compare_exchange(expected, new, o, o)
                    .is_ok()
            }
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn update_returns_the_old_word_and_stores_the_new_one() {
            let mut words = [0x1111_2222_3333_4444u64, 7];
            let at = words.as_mut_ptr() as u64;
            // SAFETY: aligned words of a live local array.
            unsafe {
                assert_eq!(super::update(at, 8, |old| old + 1), 0x1111_2222_3333_4444);
                // The low half of the first word (little-endian), as a 4-byte word.
                assert_eq!(super::update(at, 4, |old| old ^ 0xffff_ffff), 0x3333_4445);
                assert_eq!(super::load(at, 8), 0x1111_2222_cccc_bbba);
                assert_eq!(super::update(at + 8, 8, |_| 9), 7);
            }
            assert_eq!(words[1], 9);
        }
    }
}
