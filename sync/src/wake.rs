//! The arm-then-check wake-up handshake between a side that sleeps and a side that publishes
//! work (in the soft device: the PE's notification handle and the DPA completion contexts that
//! trigger a thread).
//!
//! The sleeper arms, runs a barrier, then checks for work; the publisher publishes, runs a
//! barrier, then checks the arming. With a full barrier on each side, one of the two checks sees
//! the other side's write, and the swap that consumes the arming lets exactly one of them fire:
//! a wake-up is never lost and never doubled (the loom models below).

use crate::{AtomicBool, Ordering, fence};

/// Whether the sleeping side asked to be woken.
#[derive(Debug)]
pub struct Arm {
    armed: AtomicBool,
}

impl Arm {
    pub fn new(armed: bool) -> Self {
        Self {
            armed: AtomicBool::new(armed),
        }
    }

    /// Sleeper side: arms, runs `barrier` (pairs with the publisher's), then, if `waiting` says
    /// work is already there, takes the arming back. True when the caller must fire now.
    #[inline]
    pub fn request(&self, barrier: impl FnOnce(), waiting: impl FnOnce() -> bool) -> bool {
        self.armed.store(true, Ordering::SeqCst);
        barrier();
        waiting() && self.take()
    }

    /// Publisher side, after publishing its work and running its barrier: consumes the arming
    /// if there is one. True when the caller must fire. One load while nobody is armed.
    #[inline]
    pub fn take_after_barrier(&self) -> bool {
        self.armed.load(Ordering::Relaxed) && self.take()
    }

    /// Consumes the arming: true for exactly one caller per arming.
    #[inline]
    pub fn take(&self) -> bool {
        self.armed.swap(false, Ordering::AcqRel)
    }

    /// The sleeper woke up: no wake-up is wanted any more.
    #[inline]
    pub fn disarm(&self) {
        self.armed.store(false, Ordering::Release);
    }

    /// Sets the flag where only one thread ever reads and writes it (no handshake).
    #[inline]
    pub fn set_local(&self, armed: bool) {
        self.armed.store(armed, Ordering::Relaxed);
    }

    /// Reads the flag where only one thread ever reads and writes it.
    #[inline]
    pub fn is_armed_local(&self) -> bool {
        self.armed.load(Ordering::Relaxed)
    }
}

/// The publishing side's barrier, between publishing work and reading whether the sleeper
/// armed. Pairs with [`heavy_barrier`]: either the publisher sees the arming or the sleeper's
/// check sees the work. With membarrier the heavy half runs on the (rare) sleeping side and
/// this, the datapath side, is only a compiler fence.
#[inline]
pub fn light_barrier() {
    #[cfg(not(loom))]
    if membarrier::asymmetric() {
        crate::compiler_fence(Ordering::SeqCst);
        return;
    }
    fence(Ordering::SeqCst);
}

/// The sleeping side's barrier: a full barrier on every running thread of the process where
/// the kernel offers it, else a plain fence. Loom models it as the plain fence (the fallback
/// path); that membarrier upgrades the other side's compiler fence is the kernel's contract.
pub fn heavy_barrier() {
    #[cfg(not(loom))]
    if membarrier::heavy() {
        return;
    }
    fence(Ordering::SeqCst);
}

/// An asymmetric memory barrier (Linux `membarrier`): the side that wants to sleep pays a
/// system call that makes every thread of the process execute a full barrier, so the side that
/// publishes work needs only a compiler fence.
#[cfg(not(loom))]
mod membarrier {
    use std::sync::OnceLock;

    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// Whether the expedited private membarrier is registered for this process.
    #[inline]
    pub(super) fn asymmetric() -> bool {
        // Miri does not run membarrier: take the fence fallback.
        if cfg!(miri) {
            return false;
        }
        static READY: OnceLock<bool> = OnceLock::new();
        *READY.get_or_init(|| {
            // SAFETY: membarrier takes no pointers; failure is reported by the return value.
            unsafe {
                libc::syscall(
                    libc::SYS_membarrier,
                    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                    0,
                    0,
                ) == 0
            }
        })
    }

    /// The heavy half; false when it did not run (the caller fences instead).
    pub(super) fn heavy() -> bool {
        // SAFETY: as above.
        asymmetric()
            && unsafe {
                libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0
            }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;
    use loom::thread;

    /// A sleeper arms and checks for work while `publishers` threads each publish and wake.
    /// Exactly one side fires: none would be a lost wake-up, two a doubled one. Three
    /// preemptions: a full search of two publishers takes minutes and finds nothing more.
    fn exactly_one_fires(publishers: usize) {
        crate::model(3, move || {
            let arm = Arc::new(Arm::new(false));
            let work = Arc::new(AtomicUsize::new(0));
            let fired = Arc::new(AtomicUsize::new(0));
            let threads: Vec<_> = (0..publishers)
                .map(|_| {
                    let (arm, work, fired) = (arm.clone(), work.clone(), fired.clone());
                    thread::spawn(move || {
                        work.fetch_add(1, Ordering::Relaxed);
                        light_barrier();
                        if arm.take_after_barrier() {
                            fired.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            // Loom's DPOR misses a load racing a later store of another thread when the
            // loading thread runs first (tokio-rs/loom#166): let the publishers start.
            thread::yield_now();
            if arm.request(heavy_barrier, || work.load(Ordering::Relaxed) > 0) {
                fired.fetch_add(1, Ordering::Relaxed);
            }
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(fired.load(Ordering::Relaxed), 1, "lost or doubled wake-up");
        });
    }

    #[test]
    fn one_publisher_wakes_the_sleeper_exactly_once() {
        exactly_one_fires(1);
    }

    #[test]
    fn two_publishers_wake_the_sleeper_exactly_once() {
        exactly_one_fires(2);
    }
}
