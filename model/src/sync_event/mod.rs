//! The sync event's value: one 64-bit counter that the CPU and DPA kernels read, update and wait
//! on (`doca_sync_event.h` on the host, `doca_dpa_dev_sync_event.h` on the device).
//!
//! The counter lives in the event itself, in 8 bytes of the program's memory
//! (`doca_sync_event_set_addr`), or in a page shared with the remote PCI side's process
//! ([`SharedCounter`]). Waits spin for a while, then yield the CPU between polls; they end when
//! the value satisfies the condition and at no other time, as on hardware. The task interface
//! ([`tasks`]) looks at the counter once per progress pass instead.

use crate::sync::Ordering;
// The counter is the program's own value, not a protocol of the soft device; and it may live in
// the program's memory or in memory another process maps, which loom cannot model.
use crate::sync::plain::AtomicU64;
use std::ptr::NonNull;
use std::sync::Arc;

mod shared;
pub mod tasks;

pub use shared::{BLOB_LEN, SharedCounter, check_blob_len};

/// Polls before a wait starts yielding the CPU between polls.
const SPIN_POLLS: u32 = 1 << 10;

/// Where the counter is.
#[derive(Debug)]
enum Cell {
    Own(Box<AtomicU64>),
    /// Program memory (`doca_sync_event_set_addr`): 8-byte aligned, alive until the event is
    /// destroyed, by the caller's contract.
    External(NonNull<AtomicU64>),
    /// A page shared with the remote PCI side (exported or imported).
    Shared(Arc<SharedCounter>),
}

/// A started sync event's counter, shared by the host object and the DPA handles exported from
/// it.
#[derive(Debug)]
pub struct SyncEventValue {
    cell: Cell,
}

// SAFETY: the counter is an atomic; the external one is program memory the caller keeps alive
// and accesses only atomically while the event exists.
unsafe impl Send for SyncEventValue {}
// SAFETY: as above; every access goes through the atomic.
unsafe impl Sync for SyncEventValue {}

/// How a wait compares the masked value with its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitFor {
    /// `(value & mask) > threshold`.
    Greater,
    /// `(value & mask) == threshold`.
    Equal,
    /// `(value & mask) != threshold`.
    NotEqual,
}

impl WaitFor {
    fn holds(self, value: u64, mask: u64, threshold: u64) -> bool {
        let v = value & mask;
        match self {
            WaitFor::Greater => v > threshold,
            WaitFor::Equal => v == threshold,
            WaitFor::NotEqual => v != threshold,
        }
    }
}

impl SyncEventValue {
    /// A counter inside the event, starting at 0.
    pub fn new() -> Self {
        SyncEventValue {
            cell: Cell::Own(Box::new(AtomicU64::new(0))),
        }
    }

    /// A counter at `addr` in the program's memory, keeping the value found there.
    ///
    /// # Safety
    /// `addr` must be valid for reads and writes of 8 bytes, 8-byte aligned, accessed only
    /// atomically by others, and stay valid for the life of the returned value.
    pub unsafe fn at(addr: NonNull<u64>) -> Self {
        SyncEventValue {
            cell: Cell::External(addr.cast()),
        }
    }

    /// The counter in `shared`, the page this process shares with the remote PCI side.
    pub fn shared(shared: Arc<SharedCounter>) -> Self {
        SyncEventValue {
            cell: Cell::Shared(shared),
        }
    }

    /// The shared page the counter lives in, if it is one.
    pub fn shared_counter(&self) -> Option<&Arc<SharedCounter>> {
        match &self.cell {
            Cell::Shared(s) => Some(s),
            _ => None,
        }
    }

    fn atomic(&self) -> &AtomicU64 {
        match &self.cell {
            Cell::Own(value) => value,
            // SAFETY: valid, aligned and alive for our life by `at`'s contract; the wrapper is
            // `repr(transparent)` over an atomic with the layout of a `u64`.
            Cell::External(ptr) => unsafe { ptr.as_ref() },
            Cell::Shared(shared) => shared.atomic(),
        }
    }

    /// `get`: the current value.
    pub fn get(&self) -> u64 {
        self.atomic().load(Ordering::Acquire)
    }

    /// `update_set`.
    pub fn set(&self, value: u64) {
        self.atomic().store(value, Ordering::Release);
    }

    /// `update_add`: adds atomically (wrapping); returns the value before.
    pub fn add(&self, value: u64) -> u64 {
        self.atomic().fetch_add(value, Ordering::AcqRel)
    }

    /// Waits until the condition holds; returns the value that satisfied it. `yield_each_poll`
    /// gives the CPU away after every poll (the `_yield` variants); otherwise the wait spins
    /// first.
    pub fn wait(&self, how: WaitFor, threshold: u64, mask: u64, yield_each_poll: bool) -> u64 {
        let mut polls = 0u32;
        loop {
            let value = self.get();
            if how.holds(value, mask, threshold) {
                return value;
            }
            if yield_each_poll || polls >= SPIN_POLLS {
                std::thread::yield_now();
            } else {
                polls += 1;
                std::hint::spin_loop();
            }
        }
    }
}

impl Default for SyncEventValue {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn set_add_and_get() {
        let v = SyncEventValue::new();
        assert_eq!(v.get(), 0);
        v.set(5);
        assert_eq!(v.add(3), 5);
        assert_eq!(v.get(), 8);
        assert_eq!(v.add(u64::MAX), 8, "wraps");
        assert_eq!(v.get(), 7);
    }

    #[test]
    fn waits_end_when_the_value_allows() {
        let v = Arc::new(SyncEventValue::new());
        let waiter = {
            let v = v.clone();
            std::thread::spawn(move || v.wait(WaitFor::Greater, 9, u64::MAX, false))
        };
        for _ in 0..10 {
            v.add(1);
        }
        assert_eq!(waiter.join().unwrap(), 10);
        assert_eq!(v.wait(WaitFor::Equal, 2, 0x3, true), 10, "10 & 3 == 2");
        assert_eq!(v.wait(WaitFor::NotEqual, 0, 0xff, false), 10);
    }

    #[test]
    fn the_counter_may_live_in_program_memory() {
        let mut word = 41u64;
        // SAFETY: a local that outlives the value and is only used through it meanwhile.
        let v = unsafe { SyncEventValue::at(NonNull::from(&mut word)) };
        assert_eq!(v.add(1), 41);
        drop(v);
        assert_eq!(word, 42);
    }
}
