//! Direct access: memory the bus lets the hart load and store itself, without a call per access.
//!
//! A bus that checks every access against a memory map (a list of windows with permissions)
//! pays that check on every load and store. [`Bus::direct`](crate::Bus::direct) lets it hand
//! the hart a whole window at once, after one full check: a [`Direct`] names the guest range,
//! where it lies in host memory, whether stores are granted too, and the bus's
//! [`stamp`](crate::Bus::stamp) when it was granted. The hart keeps a few of them for the
//! length of one run ([`Regions`]); an access inside one, while the bus's stamp is unchanged, is
//! two compares and a host pointer add. Everything else — a miss, a changed stamp, a store to a
//! read-only window — goes to the bus as before, so every refusal is still the bus's, with its
//! exact fault.

// The one place the hart touches host memory itself.
#![allow(unsafe_code)]

use dpakit_sync::emulated;

/// A guest range the bus granted for direct access (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Direct {
    start: u64,
    len: u64,
    /// Host address of `start`, its provenance exposed (an integer keeps the hart `Send`).
    host: u64,
    writable: bool,
    stamp: u64,
}

impl Direct {
    /// Grants the hart direct access to the guest range `[start, start + len)`, which lies at
    /// `host` in host memory: loads, and stores too if `writable`. `stamp` is the bus's
    /// [`stamp`](crate::Bus::stamp) now.
    ///
    /// # Panics
    /// If `host` and `start` differ in their low three bits: a naturally aligned guest access
    /// must be a naturally aligned host access.
    ///
    /// # Safety
    /// For as long as the bus's stamp stays `stamp`, until the end of the run of the hart that
    /// received it (the [`Hart::run`](crate::Hart::run) or `run_cached` call that asked):
    /// - every naturally aligned 1-, 2-, 4- or 8-byte range of `[host, host + len)` is valid for
    ///   atomic loads, and for atomic stores if `writable` (other threads may access it too,
    ///   atomically or through the same kind of grant);
    /// - the bus's own [`load`](crate::Bus::load) (and, if `writable`, [`store`](crate::Bus::store))
    ///   would let every such access of the guest range through: the hart skips the check.
    pub unsafe fn new(start: u64, len: u64, host: *mut u8, writable: bool, stamp: u64) -> Self {
        let host = host.expose_provenance() as u64;
        assert_eq!(
            (host ^ start) & 7,
            0,
            "guest {start:#x} and host {host:#x} are not aligned alike"
        );
        Self {
            start,
            len,
            host,
            writable,
            stamp,
        }
    }

    /// A range that holds nothing.
    const EMPTY: Direct = Direct {
        start: 0,
        len: 0,
        host: 0,
        writable: false,
        stamp: 0,
    };

    /// The host address of `[addr, addr + size)` if the range holds it, for a store if `store`.
    #[inline(always)]
    fn host(&self, addr: u64, size: u8, store: bool, stamp: u64) -> Option<u64> {
        let off = addr.wrapping_sub(self.start);
        // `off < len` first: `len - off` cannot wrap then (an empty range holds nothing).
        let inside = off < self.len && self.len - off >= u64::from(size);
        (inside && (self.writable || !store) && self.stamp == stamp)
            .then(|| self.host.wrapping_add(off))
    }
}

/// How many ranges the hart keeps: a kernel's accesses go to few windows at a time (its stack,
/// its data, one buffer), and each lookup tries them all.
const REGIONS: usize = 4;

/// The ranges the bus granted in the current run, most recent first.
#[derive(Clone, Debug)]
pub(crate) struct Regions {
    held: [Direct; REGIONS],
}

impl Default for Regions {
    fn default() -> Self {
        Self {
            held: [Direct::EMPTY; REGIONS],
        }
    }
}

impl Regions {
    /// Forgets every range: a run's grants end with it.
    #[inline(always)]
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Loads the naturally aligned `size` bytes at guest `addr` if a range granted them and
    /// `stamp` is still the bus's; `None` leaves the access to the bus.
    #[inline(always)]
    pub(crate) fn load(&self, addr: u64, size: u8, stamp: u64) -> Option<u64> {
        // A loop that returns from inside (rather than `find_map`): the hit goes straight to
        // the access, with no `Option` to test again.
        for d in &self.held {
            if let Some(host) = d.host(addr, size, false, stamp) {
                // SAFETY: a range granted for loads, in this run (`clear` ends every grant when
                // a run starts), at the stamp it was granted at: valid for atomic loads, and
                // aligned as the guest address is (`Direct::new`), which the hart aligned.
                return Some(unsafe { emulated::load(host, size) });
            }
        }
        None
    }

    /// Stores the low `size` bytes of `value` at the naturally aligned guest `addr` if a range
    /// granted stores there and `stamp` is still the bus's; false leaves the store to the bus.
    #[inline(always)]
    pub(crate) fn store(&self, addr: u64, size: u8, value: u64, stamp: u64) -> bool {
        for d in &self.held {
            if let Some(host) = d.host(addr, size, true, stamp) {
                // SAFETY: as in `load`, for a range granted writable.
                unsafe { emulated::store(host, size, value) };
                return true;
            }
        }
        false
    }

    /// Keeps `d`, dropping the range granted longest ago.
    #[cold]
    pub(crate) fn insert(&mut self, d: Direct) {
        self.held.copy_within(0..REGIONS - 1, 1);
        self.held[0] = d;
    }
}
